/**
 * examples/opentelemetry on the built package, started as its README says (`node --import
 * ./instrumentation.mjs server.mjs`, plain node, no tsx): signed deliveries over HTTP, then what an
 * operator would look at. The Prometheus endpoint, scraped over HTTP, counts each answer once with
 * bounded labels; the pino records carry the delivery's trace ids; and the span the HTTP
 * instrumentation made for the request is the parent of `webhook.delivery`, which it is only when the
 * ESM loader hook was registered before the app imported node:http.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { EVENT_TYPES } from 'service-webhooks';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { expect, test } from 'vitest';
import { sendHttp } from '../adapters/http-client.js';
import { assertBuilt, ROOT, repoPath } from '../support/paths.js';
import { spawnProcess } from '../support/process.js';

const SECRET = 'whsec_example_test';
/** What `webhook.event.type` may be on a metric: a documented type, or `unknown`. */
const BOUNDED_TYPES: readonly string[] = [...EVENT_TYPES, 'unknown'];

test('examples/opentelemetry: Prometheus counts each answer, logs carry the trace, the HTTP span is the delivery’s parent (built package)', async () => {
  assertBuilt('node.js', 'opentelemetry.js');
  const metricsPort = await freePort();
  const example = spawnProcess(
    process.execPath,
    ['--import', './examples/opentelemetry/instrumentation.mjs', 'examples/opentelemetry/server.mjs'],
    {
      name: 'examples/opentelemetry',
      cwd: ROOT,
      env: { PORT: '0', WEBHOOK_SECRET: SECRET, OTEL_EXPORTER_PROMETHEUS_PORT: String(metricsPort) },
    },
  );
  try {
    const [, port] = await example.waitFor(/Listening on http:\/\/\S+:(\d+)\/webhooks/);
    await example.waitFor(new RegExp(`Metrics on http://localhost:${metricsPort}/metrics`));
    const send = (event: object, secret = SECRET) => {
      const body = JSON.stringify(event);
      return sendHttp(`http://127.0.0.1:${port}/webhooks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-service-signature': signPayload(body, secret) },
        body: new TextEncoder().encode(body),
      });
    };
    const ada = createTestEvent('user.created', { data: { email: `ada+${Date.now()}@example.com` } });
    const grace = createTestEvent('user.created');
    const payment = createTestEvent('payment.succeeded');
    const forged = createTestEvent('user.created');
    // One after another, so that each count below is exact.
    for (const [event, secret, status] of [
      [ada, SECRET, 200],
      [ada, SECRET, 200], // the service's retry: a duplicate
      [grace, SECRET, 200],
      [payment, SECRET, 200],
      [forged, 'whsec_not_the_secret', 401],
    ] as const) {
      const response = await send(event, secret);
      expect(response.status, response.body).toBe(status);
    }

    const scrape = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(scrape.status).toBe(200);
    const text = await scrape.text();
    const samples = parseSamples(text);
    const total = (name: string, where: Record<string, string> = {}) =>
      samples
        .filter((sample) => sample.name === name)
        .filter((sample) => Object.entries(where).every(([key, value]) => sample.labels[key] === value))
        .reduce((sum, sample) => sum + sample.value, 0);

    // The names as exporter-prometheus prints them: dots become underscores, a counter gets `_total`,
    // and the unit is a `# UNIT` line, not a suffix.
    expect(text).toContain('# TYPE webhook_deliveries_total counter');
    expect(text).toContain('# TYPE webhook_delivery_duration histogram');
    expect(text).toContain('# UNIT webhook_delivery_duration s');
    expect(text).toContain('# TYPE webhook_handler_duration histogram');
    expect(text).toContain('# UNIT webhook_handler_duration s');

    const deliveries = samples.filter((sample) => sample.name === 'webhook_deliveries_total');
    expect(deliveries.map((sample) => [ownLabels(sample), sample.value])).toEqual(
      expect.arrayContaining([
        [{ webhook_outcome: 'handled', webhook_event_type: 'user.created' }, 2],
        [{ webhook_outcome: 'duplicate', webhook_event_type: 'user.created' }, 1],
        [{ webhook_outcome: 'handled', webhook_event_type: 'payment.succeeded' }, 1],
        // Refused before the signature held: no event type, only the status table's code.
        [{ webhook_outcome: 'rejected', error_type: 'invalid_signature' }, 1],
      ]),
    );
    expect(deliveries).toHaveLength(4);
    expect(total('webhook_deliveries_total')).toBe(5);
    expect(total('webhook_delivery_duration_count')).toBe(5);
    expect(total('webhook_delivery_duration_count', { webhook_outcome: 'rejected' })).toBe(1);
    // Handlers ran for the three deliveries that were handled, none for the duplicate or the forgery.
    expect(total('webhook_handler_duration_count', { webhook_outcome: 'succeeded' })).toBe(3);
    expect(total('webhook_handler_duration_count')).toBe(3);
    // Bounded labels: a documented type or `unknown`, never an event id.
    for (const sample of samples.filter((each) => each.name.startsWith('webhook_'))) {
      expect(sample.labels.otel_scope_name).toBe('service-webhooks');
      const type = sample.labels.webhook_event_type;
      if (type !== undefined) expect(BOUNDED_TYPES).toContain(type);
    }
    for (const event of [ada, grace, payment, forged]) expect(text).not.toContain(event.id);

    // The receiver's own record of the first delivery, and the line its handler logged, join its trace.
    const records = example
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const record = records.find(
      (each) => each.msg === 'webhook delivery' && each.eventId === ada.id && each.outcome === 'handled',
    );
    expect(record, example.describe()).toBeDefined();
    expect(record!.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(record!.span_id).toMatch(/^[0-9a-f]{16}$/);
    const handlerLine = records.find((each) => each.email === ada.data.email);
    expect(handlerLine).toMatchObject({ msg: 'welcome mail queued', trace_id: record!.trace_id });
    expect(handlerLine!.span_id).toBe(record!.span_id);
    const refused = records.find((each) => each.code === 'invalid_signature');
    expect(refused).toMatchObject({ level: 40, outcome: 'rejected', status: 401 });
    expect(refused!.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(refused!.eventId).toBeUndefined();

    // The span the log record names is webhook.delivery, a child of the HTTP server's span. The server
    // span ends once the response is written, so it may be printed a moment after the answer arrived.
    const delivery = printedSpans(example.output()).find((span) => span.id === record!.span_id);
    expect(delivery, example.describe()).toMatchObject({
      name: 'webhook.delivery',
      traceId: record!.trace_id,
    });
    expect(
      delivery!.parentId,
      'webhook.delivery is a root span: the HTTP instrumentation did not patch the ESM import of node:http',
    ).toBeDefined();
    await example.waitFor(new RegExp(`^ {2}id: '${delivery!.parentId}'`, 'm'), 5_000);
    const server = printedSpans(example.output()).find((span) => span.id === delivery!.parentId);
    expect(server).toMatchObject({ name: 'POST', kind: 1, traceId: record!.trace_id, parentId: undefined });
    // The example keeps the default memory store, which answers at once: no step spans are made for it
    // (a store that waits, Redis or PostgreSQL, adds webhook.store.claim and .complete).
    const names = printedSpans(example.output()).map((span) => span.name);
    expect(names).toContain('webhook.delivery');
    expect(names).not.toContain('webhook.store.claim');
  } finally {
    await example.stop();
  }
  // Stopped by SIGTERM, it closed its server and flushed the providers, and exited on its own.
  expect(await example.exited).toBe(0);
}, 60_000);

/** The docs' setup is these two files as they are, so what CI runs above is what users copy. */
test("the docs' Observability setup is examples/opentelemetry, byte for byte", () => {
  const readme = readFileSync(repoPath('docs', 'observability', 'index.md'), 'utf8');
  for (const file of ['instrumentation.mjs', 'server.mjs']) {
    const source = readFileSync(repoPath('examples', 'opentelemetry', file), 'utf8');
    expect(readme, `docs/observability/index.md shows examples/opentelemetry/${file} as it is`).toContain(
      `\`\`\`js\n${source}\`\`\``,
    );
  }
});

interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

/** The samples of a Prometheus text exposition (`name{label="value",...} value`), comments left out. */
function parseSamples(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match) throw new Error(`not a Prometheus sample: ${line}`);
      const labels: Record<string, string> = {};
      for (const [, key, value] of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
        labels[key!] = value!;
      }
      return { name: match[1]!, labels, value: Number(match[3]) };
    });
}

/** A sample's labels without the instrumentation scope the exporter adds to every one. */
function ownLabels(sample: Sample): Record<string, string> {
  const { otel_scope_name: _name, otel_scope_version: _version, ...own } = sample.labels;
  return own;
}

interface PrintedSpan {
  readonly name: string;
  readonly id: string;
  readonly traceId: string;
  readonly parentId: string | undefined;
  readonly kind: number;
}

/**
 * The spans ConsoleSpanExporter printed: one `console.dir` object each, from `{` to `}` at the start
 * of a line, its own fields indented by two spaces (pino's JSON lines start with `{"`, never `{\n`).
 */
function printedSpans(stdout: string): PrintedSpan[] {
  return [...stdout.matchAll(/^\{\n {2}resource:[\s\S]*?^\}$/gm)].map(([block]) => {
    const field = (pattern: RegExp) => pattern.exec(block)?.[1];
    return {
      name: field(/^ {2}name: '([^']*)'/m)!,
      id: field(/^ {2}id: '([0-9a-f]{16})'/m)!,
      traceId: field(/^ {2}traceId: '([0-9a-f]{32})'/m)!,
      parentId: field(/^ {2}parentSpanContext: \{[^}]*?spanId: '([0-9a-f]{16})'/m),
      kind: Number(field(/^ {2}kind: (\d+)/m)),
    };
  });
}

/** A loopback port nothing listens on now, for the example's Prometheus endpoint. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}
