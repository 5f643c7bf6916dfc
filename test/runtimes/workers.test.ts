/**
 * examples/workers on workerd, the Cloudflare Workers runtime, through miniflare 3 (the version that
 * runs on Node 20). The Worker is bundled the way wrangler does it (esbuild, the workerd/worker/browser
 * conditions, `cloudflare:*` left to the runtime), so it runs the built package a user's deploy would.
 * Requests go to workerd's own HTTP port. Three setups: without compatibility flags (the core verifies
 * with Web Crypto), with nodejs_compat (node:crypto), and behind a forwarding Worker, the shape of
 * wrangler dev's local proxy.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type BuildOptions, build } from 'esbuild';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { describe, expect, test } from 'vitest';
import { loadMiniflare, runtimesPath } from '../support/runtimes.js';
import { runRuntimeCases } from './runtime-cases.js';
import { assertBuilt, captureOutput, run, SECRET, versionOf } from './runtime-process.js';

const EXAMPLE = fileURLToPath(new URL('../../examples/workers/', import.meta.url));
const COMPATIBILITY_DATE = /^compatibility_date = "([\d-]+)"$/m.exec(
  readFileSync(`${EXAMPLE}wrangler.toml`, 'utf8'),
)![1]!;
const miniflareVersion = (
  JSON.parse(readFileSync(runtimesPath('miniflare', 'package.json'), 'utf8')) as { version: string }
).version;
const workerd = await versionOf(async () => (await run('workerd', ['--version'])).trim());
const RUNTIME = `${workerd} (miniflare ${miniflareVersion})`;
// From the side install of scripts/side-installs/runtimes, not the root node_modules (test/support/runtimes.ts).
const Miniflare = await loadMiniflare();

/** What wrangler's esbuild step does with a Worker's modules. */
const BUNDLE_OPTIONS = {
  absWorkingDir: EXAMPLE,
  // The project's tsconfig for every file: dist/ sits under the repository root, whose `paths`
  // would bundle src/ a second time for dist/web.js's own import of the core.
  tsconfig: `${EXAMPLE}tsconfig.json`,
  bundle: true,
  format: 'esm',
  target: 'es2022',
  platform: 'neutral',
  conditions: ['workerd', 'worker', 'browser'],
  mainFields: ['browser', 'module', 'main'],
  external: ['cloudflare:*'],
  write: false,
  metafile: true,
  logLevel: 'silent',
} satisfies BuildOptions;

/** The Worker bundled as wrangler does, with the files that went into it. */
async function bundle(): Promise<{ script: string; inputs: string[] }> {
  assertBuilt();
  const result = await build({ entryPoints: [`${EXAMPLE}worker.ts`], ...BUNDLE_OPTIONS });
  return { script: result.outputFiles[0]!.text, inputs: Object.keys(result.metafile.inputs) };
}

let bundled: ReturnType<typeof bundle> | undefined;
const worker = () => {
  bundled ??= bundle();
  return bundled;
};

/** Start the example Worker; `behindProxy`: a second workerd forwards every request to it. */
async function startWorker(
  compatibilityFlags: string[],
  { behindProxy = false, bindings = { WEBHOOK_SECRET: SECRET } as Record<string, string> } = {},
) {
  const { script } = await worker();
  let output!: ReturnType<typeof captureOutput>;
  const receiver = new Miniflare({
    modules: true,
    script,
    compatibilityDate: COMPATIBILITY_DATE,
    compatibilityFlags,
    bindings,
    handleRuntimeStdio(stdout, stderr) {
      output = captureOutput(stdout, stderr, async () => {});
    },
  });
  let proxy: InstanceType<typeof Miniflare> | undefined;
  const close = async () => {
    await proxy?.dispose();
    await receiver.dispose();
  };
  try {
    const receiverUrl = await receiver.ready;
    if (behindProxy) {
      proxy = new Miniflare({
        modules: true,
        compatibilityDate: COMPATIBILITY_DATE,
        bindings: { TARGET: receiverUrl.origin },
        script: `export default {
          fetch(request, env) {
            const url = new URL(request.url);
            return fetch(new Request(env.TARGET + url.pathname + url.search, request));
          },
        };`,
      });
    }
    const url = proxy === undefined ? receiverUrl : await proxy.ready;
    return { ...output, close, url: new URL('/webhooks', url).href };
  } catch (error) {
    await close();
    const printed = (output as ReturnType<typeof captureOutput> | undefined)?.describe() ?? '';
    throw new Error(`workerd could not start the example Worker: ${(error as Error).message}\n${printed}`, {
      cause: error,
    });
  }
}

test(`${RUNTIME}: the Worker bundles the built files in dist/ and nothing else of the package`, async () => {
  const { inputs } = await worker();
  const own = inputs.filter((input) => !input.includes('node_modules/'));
  // The root (the example takes the default MemoryStore) loads the core, its one copy.
  expect(own.sort()).toEqual([
    '../../dist/core.js',
    '../../dist/index.js',
    '../../dist/schemas.js',
    '../../dist/web.js',
    'worker.ts',
  ]);
});

test(`${RUNTIME}: a secret read from process.env at module load stops the Worker from starting`, async () => {
  // The pattern of the other runtimes' snippets. Without nodejs_compat there is no `process` (with
  // it, process.env holds the bindings from compatibility date 2025-04-01 on).
  const result = await build({
    stdin: {
      contents: `import { createWebhooks } from 'service-webhooks';
        import { webHandler } from 'service-webhooks/web';
        const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET });
        export default { fetch: webHandler(webhooks) };`,
      resolveDir: EXAMPLE,
      loader: 'ts',
    },
    ...BUNDLE_OPTIONS,
  });
  let stderr = '';
  const mf = new Miniflare({
    modules: true,
    script: result.outputFiles[0]!.text,
    compatibilityDate: COMPATIBILITY_DATE,
    bindings: { WEBHOOK_SECRET: SECRET },
    handleRuntimeStdio(stdout, errors) {
      stdout.resume();
      errors.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
    },
  });
  try {
    await expect(mf.ready).rejects.toThrow(/failed to start/);
    expect(stderr).toContain('ReferenceError: process is not defined');
  } finally {
    await mf.dispose().catch(() => {});
  }
});

test(`${RUNTIME}: without the WEBHOOK_SECRET binding the Worker still starts, and answers 503 secret_unavailable`, async () => {
  const receiver = await startWorker([], { bindings: {} });
  try {
    const body = JSON.stringify(createTestEvent('user.created'));
    const response = await fetch(receiver.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-signature': signPayload(body, SECRET) },
      body,
    });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('secret_unavailable');
  } finally {
    await receiver.close();
  }
});

runRuntimeCases({
  name: `${RUNTIME}, no compatibility flags (Web Crypto)`,
  // workerd closes the connection with the body unread, so a sender still writing may get a reset;
  // adapters/internal/read-web-body.ts reads and drops refused bodies up to 1 MiB so the 413 arrives.
  cleanRefusalUpTo: 1024 * 1024,
  start: () => startWorker([]),
});

runRuntimeCases({
  name: `${RUNTIME}, nodejs_compat (node:crypto)`,
  cleanRefusalUpTo: 1024 * 1024,
  start: () => startWorker(['nodejs_compat']),
});

describe(`${RUNTIME} behind a forwarding Worker (the shape of wrangler dev's proxy)`, () => {
  test('a delivery is handled; an upload refused midway never hangs the proxy nor reaches a handler', async () => {
    const receiver = await startWorker([], { behindProxy: true });
    try {
      const send = async (body: Uint8Array<ArrayBuffer>) => {
        try {
          const response = await fetch(receiver.url, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-service-signature': signPayload(body, SECRET) },
            body,
            signal: AbortSignal.timeout(10_000),
          });
          return { status: response.status, text: await response.text() };
        } catch (error) {
          if ((error as Error).name === 'TimeoutError') throw new Error('the proxy hung: no answer in 10 s');
          return { status: 0, text: String((error as { cause?: unknown }).cause ?? error) };
        }
      };
      const event = createTestEvent('user.created');
      expect((await send(new TextEncoder().encode(JSON.stringify(event)))).status).toBe(200);

      for (const size of [256 * 1024, 8 * 1024 * 1024]) {
        const large = new Uint8Array(size).fill(0x20);
        const refused = createTestEvent('user.created');
        large.set(new TextEncoder().encode(JSON.stringify(refused)));
        const answer = await send(large);
        // What wrangler dev's users see today: the 413, or the proxy's own error once workerd reset
        // the upstream connection under it (500 "Network connection lost"), or a reset.
        console.info(`${RUNTIME} behind a proxy, ${size / 1024} KiB upload: ${answer.status} ${answer.text}`);
        expect(answer.status).not.toBe(200);
        expect(receiver.output()).not.toContain(refused.id);
      }
      const after = createTestEvent('user.created');
      const afterBody = new TextEncoder().encode(JSON.stringify(after));
      let answer = await send(afterBody);
      // After a refused 8 MiB upload fetch may keep the connection workerd then reset in its pool (the
      // answer came while it was still writing); the request on it fails at once, without reaching the
      // proxy, and the socket is dropped. The sender's retry comes minutes later on a new connection:
      // so does this one. What must hold is that the proxy answers it.
      if (answer.status === 0) answer = await send(afterBody);
      expect(answer.status).toBe(200);
      expect(receiver.output()).toContain(`user.created ${event.id} `);
    } finally {
      await receiver.close();
    }
  });
});
