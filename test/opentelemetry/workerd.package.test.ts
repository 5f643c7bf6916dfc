/**
 * Issue 31 on an edge runtime: workerd, the Cloudflare Workers runtime (through miniflare, as
 * test/runtimes/workers.test.ts runs it), with Workers bundled from the BUILT package
 * (test/opentelemetry/fixtures/workerd). The same receiver module three ways:
 *
 * - without the `telemetry` option: no module of `@opentelemetry/*` is in the bundle, and it answers;
 * - with `openTelemetry()` and `@opentelemetry/api` alone (no SDK, no compatibility flags): the API's
 *   no-op, and deliveries are answered as without it;
 * - with the OpenTelemetry JS SDK registered in the Worker (nodejs_compat, for AsyncLocalStorage):
 *   the web and the Next.js route handlers each make one trace, the request's span →
 *   `webhook.delivery` → the handler's span, and `webhook.deliveries` counts them.
 */
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';
import { type BuildOptions, build } from 'esbuild';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { describe, expect, test } from 'vitest';
import { captureOutput, ROOT, run, versionOf } from '../runtimes/runtime-process.js';
import { assertBuilt } from '../support/paths.js';
import { waitForLine } from '../support/process.js';
import { loadMiniflare } from '../support/runtimes.js';

const WORKERS = fileURLToPath(new URL('./fixtures/workerd/', import.meta.url));
const SECRET = 'whsec_workerd_telemetry';
const COMPATIBILITY_DATE = /^compatibility_date = "([\d-]+)"$/m.exec(
  readFileSync(`${ROOT}examples/workers/wrangler.toml`, 'utf8'),
)![1]!;
const workerd = await versionOf(async () => (await run('workerd', ['--version'])).trim());
// From the side install of scripts/side-installs/runtimes, not the root node_modules (test/support/runtimes.ts).
const Miniflare = await loadMiniflare();

/**
 * What wrangler's esbuild step does with a Worker's modules. The platform is esbuild's default, as
 * wrangler leaves it: the SDK picks its browser code (no node:os, no child_process) through the
 * object form of package.json `browser`, which esbuild reads on that platform only.
 */
const BUNDLE_OPTIONS = {
  absWorkingDir: WORKERS,
  // The fixtures are JavaScript; the repository's tsconfig `paths` would bundle src/ instead of dist/.
  tsconfigRaw: '{}',
  bundle: true,
  format: 'esm',
  target: 'es2022',
  platform: 'browser',
  conditions: ['workerd', 'worker', 'browser'],
  mainFields: ['browser', 'module', 'main'],
  external: ['cloudflare:*'],
  write: false,
  metafile: true,
  logLevel: 'silent',
} satisfies BuildOptions;

/**
 * With nodejs_compat, wrangler leaves Node's built-ins to the runtime and turns a CommonJS
 * `require()` of one into an import: @opentelemetry/context-async-hooks is CommonJS and requires
 * `async_hooks` and `events`.
 */
const NODEJS_COMPAT_OPTIONS = {
  external: ['cloudflare:*', 'node:*', ...builtinModules],
  banner: {
    js: [
      "import * as __async_hooks from 'node:async_hooks';",
      "import * as __events from 'node:events';",
      "const require = (name) => ({ async_hooks: __async_hooks, events: __events })[name.replace(/^node:/, '')];",
    ].join(' '),
  },
} satisfies BuildOptions;

type Entry = 'plain.mjs' | 'api-only.mjs' | 'sdk.mjs';

async function bundle(entry: Entry, nodejsCompat = false) {
  assertBuilt('web.js', 'next.js', 'opentelemetry.js');
  const result = await build({
    entryPoints: [`${WORKERS}${entry}`],
    ...BUNDLE_OPTIONS,
    ...(nodejsCompat ? NODEJS_COMPAT_OPTIONS : {}),
  });
  const inputs = Object.keys(result.metafile.inputs);
  return {
    script: result.outputFiles[0]!.text,
    /** The package's files and the fixtures, as paths from the repository root. */
    own: inputs
      .filter((input) => !input.includes('node_modules/'))
      .map((input) => fileURLToPath(new URL(input, `file://${WORKERS}`)).slice(ROOT.length))
      .sort(),
    /** The `@opentelemetry/*` packages the bundle holds. */
    openTelemetry: [
      ...new Set(inputs.map((input) => /node_modules\/(@opentelemetry\/[^/]+)\//.exec(input)?.[1])),
    ]
      .filter((name) => name !== undefined)
      .sort(),
  };
}

async function startWorker(script: string, compatibilityFlags: string[] = []) {
  let output!: ReturnType<typeof captureOutput>;
  const worker = new Miniflare({
    modules: true,
    script,
    compatibilityDate: COMPATIBILITY_DATE,
    compatibilityFlags,
    bindings: { WEBHOOK_SECRET: SECRET },
    handleRuntimeStdio(stdout, stderr) {
      output = captureOutput(stdout, stderr, async () => {});
    },
  });
  try {
    const origin = (await worker.ready).origin;
    return { ...output, origin, close: () => worker.dispose() };
  } catch (error) {
    await worker.dispose();
    const printed = (output as ReturnType<typeof captureOutput> | undefined)?.describe() ?? '';
    throw new Error(`workerd could not start the Worker: ${(error as Error).message}\n${printed}`, {
      cause: error,
    });
  }
}

type Worker = Awaited<ReturnType<typeof startWorker>>;

/** Send a signed `user.created` (signed with `secret`) and wait for its handler's line when it is answered 200. */
async function deliver(worker: Worker, path: string, secret = SECRET) {
  const event = createTestEvent('user.created');
  const body = JSON.stringify(event);
  const response = await fetch(`${worker.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-service-signature': signPayload(body, secret) },
    body,
  });
  const answer = { status: response.status, body: await response.text(), event };
  if (answer.status === 200) await waitForLine(worker, new RegExp(`handled ${event.id}`));
  return answer;
}

describe(`${workerd}: the receiver without the telemetry option`, () => {
  test('its bundle holds no module of @opentelemetry, nor the API’s global key', async () => {
    const { own, openTelemetry, script } = await bundle('plain.mjs');
    expect(openTelemetry).toEqual([]);
    expect(script).not.toContain('opentelemetry.js.api');
    expect(own).toEqual([
      'dist/core.js',
      'dist/index.js',
      'dist/web.js',
      'test/opentelemetry/fixtures/workerd/plain.mjs',
      'test/opentelemetry/fixtures/workerd/receiver.mjs',
    ]);
  });

  test('a signed delivery is handled, a forged one refused', async () => {
    const worker = await startWorker((await bundle('plain.mjs')).script);
    try {
      expect((await deliver(worker, '/web')).status).toBe(200);
      expect((await deliver(worker, '/web', 'whsec_someone_else')).status).toBe(401);
    } finally {
      await worker.close();
    }
  });
});

describe(`${workerd}: openTelemetry() with @opentelemetry/api alone (no SDK, no compatibility flags)`, () => {
  test('its bundle adds the plug-in and the API, nothing else of OpenTelemetry', async () => {
    const { own, openTelemetry } = await bundle('api-only.mjs');
    expect(openTelemetry).toEqual(['@opentelemetry/api']);
    expect(own).toContain('dist/opentelemetry.js');
  });

  test('deliveries are answered as without it: handled, duplicate, forged', async () => {
    const worker = await startWorker((await bundle('api-only.mjs')).script);
    try {
      const first = await deliver(worker, '/web');
      expect(first.status).toBe(200);
      const body = JSON.stringify(first.event);
      const again = await fetch(`${worker.origin}/web`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-service-signature': signPayload(body, SECRET) },
        body,
      });
      expect(again.status).toBe(200);
      expect(worker.output().match(new RegExp(`handled ${first.event.id}`, 'g'))).toHaveLength(1);
      expect((await deliver(worker, '/web', 'whsec_someone_else')).status).toBe(401);
      expect(worker.describe()).not.toMatch(/error|warn/i);
    } finally {
      await worker.close();
    }
  });
});

describe(`${workerd} with nodejs_compat: openTelemetry() with the OpenTelemetry JS SDK registered in the Worker`, () => {
  test('the web and the Next.js route handlers: request span → webhook.delivery → the handler’s span, and the count', async () => {
    const worker = await startWorker((await bundle('sdk.mjs', true)).script, ['nodejs_compat']);
    try {
      const sent = { '/web': await deliver(worker, '/web'), '/next': await deliver(worker, '/next') };
      for (const { status } of Object.values(sent)) expect(status).toBe(200);
      const { spans, deliveries } = (await (await fetch(`${worker.origin}/telemetry`)).json()) as {
        spans: {
          name: string;
          traceId: string;
          spanId: string;
          parentSpanId?: string;
          attributes: Record<string, unknown>;
        }[];
        deliveries: { attributes: Record<string, string>; value: number }[];
      };
      const deliverySpans = spans.filter((span) => span.name === 'webhook.delivery');
      expect(deliverySpans, worker.describe()).toHaveLength(2);
      for (const { event } of Object.values(sent)) {
        const delivery = deliverySpans.find((span) => span.attributes['webhook.event.id'] === event.id);
        expect(delivery?.attributes).toMatchObject({
          'webhook.event.type': 'user.created',
          'webhook.outcome': 'handled',
          'http.response.status_code': 200,
        });
        const trace = spans.filter((span) => span.traceId === delivery!.traceId);
        const request = trace.find((span) => span.name === 'fetch')!;
        expect(request.parentSpanId).toBeUndefined();
        expect(delivery!.parentSpanId).toBe(request.spanId);
        const children = trace.filter((span) => span.parentSpanId === delivery!.spanId).map((s) => s.name);
        // The memory store answers at once: no step spans, only the handler's own.
        expect(children).toEqual(['send welcome mail']);
      }
      expect(deliveries).toEqual([
        { attributes: { 'webhook.outcome': 'handled', 'webhook.event.type': 'user.created' }, value: 2 },
      ]);
    } finally {
      await worker.close();
    }
  });
});
