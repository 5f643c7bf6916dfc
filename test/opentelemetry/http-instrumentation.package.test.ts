/**
 * Issue 31 under the real `@opentelemetry/instrumentation-http`: three ESM apps on the BUILT package
 * (node:http with `service-webhooks/node`, Express 5, Fastify 5), each its own process started as the
 * README says, `node --import ./instrumentation.mjs app.mjs` (test/opentelemetry/fixtures). A signed
 * delivery over real HTTP makes one trace: the HTTP server span, `webhook.delivery` its child, and the
 * span the handler starts the delivery's child.
 *
 * It also measures the two ways of getting it wrong, so that the docs' form is there for a reason:
 * the SDK started inside the app after node:http was imported records no HTTP span in any of the
 * three (the delivery becomes a trace's root), and `--import` without the loader hook loses the
 * node:http app's HTTP span (Express and Fastify load node:http with require(), which the
 * instrumentation sees without the hook).
 *
 * Package tier: the apps import `service-webhooks/*` by name, which resolves to dist/ (the package's
 * own `exports`) in a plain `node` process; the sources would need a TypeScript loader of their own
 * in front of the instrumentation's, which is not what a user runs.
 */
import { fileURLToPath } from 'node:url';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { describe, expect, test } from 'vitest';
import { assertBuilt } from '../support/paths.js';
import { startProcess } from '../support/process.js';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const SECRET = 'whsec_http_instrumentation';
/** OpenTelemetry's SpanKind, as the exporter writes it. */
const SERVER = 1;

/** A span as test/opentelemetry/fixtures/span-lines.mjs prints it. */
interface SpanLine {
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  attributes: Record<string, unknown>;
}

const APPS = [
  // Express and Fastify require('node:http') from CommonJS: the instrumentation patches it without the hook.
  { name: 'node:http with service-webhooks/node', file: 'node-app.mjs', serverSpansWithoutHook: 0 },
  { name: 'Express 5 with service-webhooks/express', file: 'express-app.mjs', serverSpansWithoutHook: 1 },
  { name: 'Fastify 5 with service-webhooks/fastify', file: 'fastify-app.mjs', serverSpansWithoutHook: 1 },
] as const;

/**
 * Start `node <args>` in the fixtures folder, send it one signed `user.created`, stop it, and answer
 * the status, the event and the spans it printed. The app exits only once its server has closed, so
 * every span that was going to end is in its output by then.
 */
async function deliverOnce(args: string[], env: Record<string, string> = {}) {
  assertBuilt('node.js', 'express.js', 'fastify.js', 'opentelemetry.js');
  const app = await startProcess(process.execPath, args, {
    name: `node ${args.join(' ')}`,
    cwd: FIXTURES,
    env: { ...env, WEBHOOK_SECRET: SECRET },
    ready: /Listening on (http:\/\/\S+\/webhooks)/,
  });
  try {
    const event = createTestEvent('user.created');
    const body = JSON.stringify(event);
    const response = await fetch(app.match[1]!, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-signature': signPayload(body, SECRET) },
      body,
    });
    const status = response.status;
    await response.arrayBuffer();
    await app.waitFor(new RegExp(`handled ${event.id}`));
    await app.stop();
    expect(await app.exited, app.describe()).toBe(0);
    const spans = app
      .output()
      .split('\n')
      .filter((line) => line.startsWith('span '))
      .map((line) => JSON.parse(line.slice('span '.length)) as SpanLine);
    const named = (name: string) => spans.filter((span) => span.name === name);
    return { status, event, spans, named, describe: app.describe };
  } finally {
    await app.stop('SIGKILL');
  }
}

for (const { name, file, serverSpansWithoutHook } of APPS) {
  describe(name, () => {
    test('node --import ./instrumentation.mjs: HTTP server span → webhook.delivery → the handler’s span, one trace', async () => {
      const { status, event, spans, named, describe } = await deliverOnce([
        '--import',
        './instrumentation.mjs',
        file,
      ]);
      expect(status).toBe(200);
      const servers = spans.filter((span) => span.kind === SERVER);
      expect(servers, describe()).toHaveLength(1);
      const [server] = servers;
      expect(server!.parentSpanId).toBeUndefined();
      expect(server!.attributes).toMatchObject({
        'http.request.method': 'POST',
        'url.path': '/webhooks',
        'http.response.status_code': 200,
      });
      const [delivery, ...moreDeliveries] = named('webhook.delivery');
      const [mail, ...moreMails] = named('send welcome mail');
      expect(moreDeliveries).toEqual([]);
      expect(moreMails).toEqual([]);
      expect(delivery!.parentSpanId).toBe(server!.spanId);
      expect(mail!.parentSpanId).toBe(delivery!.spanId);
      // The memory store answers at once, so it makes no step spans (a store that waits does).
      expect(named('webhook.store.claim')).toEqual([]);
      expect(new Set(spans.map((span) => span.traceId))).toEqual(new Set([server!.traceId]));
      expect(delivery!.attributes).toMatchObject({
        'webhook.event.id': event.id,
        'webhook.event.type': 'user.created',
        'webhook.outcome': 'handled',
        'http.response.status_code': 200,
      });
    });

    test('the SDK started inside the app, after its imports: no HTTP span, and the delivery is a root', async () => {
      const { status, spans, named, describe } = await deliverOnce([file], { LATE_SDK: '1' });
      expect(status).toBe(200);
      expect(spans.filter((span) => span.kind === SERVER)).toEqual([]);
      // The SDK did start: the library's and the handler's spans are there, in a trace of their own.
      const [delivery] = named('webhook.delivery');
      expect(delivery, describe()).toBeDefined();
      expect(delivery!.parentSpanId).toBeUndefined();
      expect(named('send welcome mail').map((span) => span.parentSpanId)).toEqual([delivery!.spanId]);
    });

    test(`--import without the loader hook: ${serverSpansWithoutHook === 1 ? 'the HTTP span is there (Express and Fastify require() node:http)' : 'no HTTP span'}`, async () => {
      const { status, spans, named } = await deliverOnce(['--import', './sdk-without-hook.mjs', file]);
      expect(status).toBe(200);
      const servers = spans.filter((span) => span.kind === SERVER);
      expect(servers).toHaveLength(serverSpansWithoutHook);
      const [delivery] = named('webhook.delivery');
      expect(delivery!.parentSpanId).toBe(servers[0]?.spanId);
    });
  });
}
