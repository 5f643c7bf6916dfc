/**
 * Issue 31 across the queue, on real Redis, real BullMQ and the real OpenTelemetry SDK (in-memory
 * exporter, on-demand metric reader, AsyncLocalStorage context): a delivery queued at the door and run
 * by an in-process worker is one trace, each retry a span of it, a replay a trace of its own linked to
 * the door's; the worker counts its dead letters and reports the inbox's gauges when the SDK collects,
 * until it closes; and the counters say what was sent and handled, no more.
 *
 * The door and the worker have receivers of their own, as two processes would, and share one SDK so
 * that the test reads what a backend would get from both.
 */
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { Redis } from 'ioredis';
import { type AnyWebhookEvent, createWebhooks, type HandlerContext } from 'service-webhooks';
import { type InboxWorker, inboxAdmin, startInboxWorker } from 'service-webhooks/bullmq';
import { openTelemetry } from 'service-webhooks/opentelemetry';
import { RedisStore } from 'service-webhooks/redis';
import { createTestEvent } from 'service-webhooks/testing';
import { afterAll, afterEach, beforeAll, beforeEach, expect, test } from 'vitest';
import { inParallel } from '../support/in-parallel.js';
import { type OpenTelemetryHarness, startOpenTelemetry } from '../support/opentelemetry.js';
import { RedisServer } from '../support/redis-servers.js';
import { sealed } from '../support/sealed-entry.js';
import { sleep } from '../support/sleep.js';
import { waitUntil } from '../support/wait-until.js';
import { type Door, deliver, failFastClient, SECRET, startDoor, uniqueName } from './support.js';

let redis: RedisServer;
let otel: OpenTelemetryHarness;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  redis = await RedisServer.start();
});

beforeEach(() => {
  otel = startOpenTelemetry();
});

afterEach(async () => {
  // The workers close before the SDK shuts down: a collection must never outlive its queue.
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await otel.shutdown();
});

afterAll(async () => {
  await redis?.destroy();
});

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const spansNamed = (name: string) => otel.spans().filter((span) => span.name === name);

/** The plug-in, on the harness's providers (not the globals), for a door or a worker. */
function telemetry() {
  const { tracerProvider, meterProvider } = otel;
  return openTelemetry({ tracerProvider, meterProvider });
}

interface Setup {
  readonly door: Door;
  readonly worker: InboxWorker;
  readonly queueName: string;
  /** How often a metric collection read the worker's gauges. */
  readonly reads: () => number;
}

/**
 * A door (createWebhooks with a bullmqInbox, behind node:http) and an in-process worker, each with
 * openTelemetry() on the harness's SDK. The worker's plug-in is the real one, with its `observeInbox`
 * wrapped only to count the reads a collection makes.
 */
async function setup(
  handler: (event: AnyWebhookEvent, ctx: HandlerContext) => Promise<void> | void,
  worker: {
    attempts?: number;
    concurrency?: number;
    redisUrl?: string;
    acceptUnsealedEntries?: boolean;
  } = {},
): Promise<Setup> {
  const redisUrl = worker.redisUrl ?? redis.url;
  const queueName = uniqueName('telemetry');
  const storePrefix = `${queueName}:store:`;
  const door = await startDoor({
    redisUrl,
    queueName,
    storePrefix,
    receiver: { telemetry: telemetry() },
  });
  cleanups.push(() => door.close());

  const plugin = telemetry();
  const observeInbox = plugin.observeInbox.bind(plugin);
  let reads = 0;
  plugin.observeInbox = (read) =>
    observeInbox(() => {
      reads += 1;
      return read();
    });
  const storeClient: Redis = failFastClient(redisUrl);
  const webhooks = createWebhooks({
    secret: SECRET,
    store: new RedisStore({ client: storeClient, prefix: storePrefix }),
    telemetry: plugin,
  });
  // The failures are what some tests are about; they reach the spans, not stderr.
  webhooks.onError(() => {});
  webhooks.onAny(handler);
  const running = startInboxWorker(webhooks, {
    connection: redisUrl,
    queueName,
    monitor: false,
    concurrency: worker.concurrency ?? 5,
    attempts: worker.attempts ?? 3,
    // Short, so that a dead letter takes a few hundred milliseconds rather than days.
    backoff: [100],
    ...(worker.acceptUnsealedEntries === undefined
      ? {}
      : { acceptUnsealedEntries: worker.acceptUnsealedEntries }),
  });
  cleanups.push(async () => {
    await running.close();
    storeClient.disconnect();
  });
  await running.waitUntilReady();
  return { door, worker: running, queueName, reads: () => reads };
}

/** Collect until `check` holds: the worker's 'failed' event (and its count) follows the job's move. */
async function collectUntil(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  await waitUntil(
    what,
    async () => {
      await otel.collect();
      return check();
    },
    timeoutMs,
  );
}

test("the worker's run is the door's child in one trace, and the handler's span is the run's", async () => {
  const tracer = otel.tracerProvider.getTracer('test');
  const { door } = await setup(async () => {
    await sleep(1);
    tracer.startSpan('send welcome mail').end();
  });
  const event = createTestEvent('user.created');
  expect((await deliver(door.url, event)).status).toBe(200);
  await waitUntil('the run to end', () => spansNamed('webhook.inbox.run').length === 1, 10_000);

  const delivery = otel.span('webhook.delivery');
  const run = otel.span('webhook.inbox.run');
  const mail = otel.span('send welcome mail');
  expect(delivery.attributes).toMatchObject({
    'webhook.outcome': 'queued',
    'webhook.event.id': event.id,
    'http.response.status_code': 200,
  });
  expect(run.spanContext().traceId).toBe(delivery.spanContext().traceId);
  expect(parentOf(run)).toBe(delivery.spanContext().spanId);
  expect(run.kind).toBe(SpanKind.CONSUMER);
  expect(run.attributes).toMatchObject({
    'webhook.attempt': 1,
    'webhook.outcome': 'handled',
    'webhook.event.id': event.id,
    'webhook.event.type': 'user.created',
  });
  expect(run.status.code).toBe(SpanStatusCode.UNSET);
  expect(mail.spanContext().traceId).toBe(delivery.spanContext().traceId);
  expect(parentOf(mail)).toBe(run.spanContext().spanId);
  // The queue write the door waited on is a step of the delivery, apart from the worker's run.
  expect(parentOf(otel.span('webhook.inbox.enqueue'))).toBe(delivery.spanContext().spanId);
});

test('a job without a traceparent, or with one that is not one, is run all the same, in a trace of its own', async () => {
  const handled: string[] = [];
  const { worker } = await setup((event) => {
    handled.push(event.id);
  });
  const entries: [string, unknown][] = [
    ['none', undefined],
    ['not W3C', '00-not-a-trace-01'],
    ['all zero', `00-${'0'.repeat(32)}-${'0'.repeat(16)}-01`],
    ['a number', 42],
  ];
  // Sealed as a door would, whatever it put in `traceparent` (BullMQ's data keeps only a string), and
  // written straight to the queue.
  for (const [label, traceparent] of entries) {
    const event = createTestEvent('user.created');
    const entry = { event, receivedAt: Date.now(), secretIndex: 0 };
    const data =
      typeof traceparent === 'string'
        ? await sealed({ ...entry, traceparent }, SECRET)
        : { ...(await sealed(entry, SECRET)), traceparent };
    await worker.queue.add('event', data as never, {
      jobId: `e.${label.replaceAll(' ', '-')}`,
      attempts: 2 ** 31 - 1,
      backoff: { type: 'service-webhooks' },
    });
  }
  await waitUntil(
    'every run to end',
    () => spansNamed('webhook.inbox.run').length === entries.length,
    10_000,
  );
  expect(handled).toHaveLength(entries.length);
  const runs = spansNamed('webhook.inbox.run');
  for (const run of runs) {
    expect(run.attributes['webhook.outcome']).toBe('handled');
    expect(run.parentSpanContext).toBeUndefined();
    expect(run.links).toEqual([]);
  }
  expect(new Set(runs.map((run) => run.spanContext().traceId)).size).toBe(entries.length);
  expect((await worker.stats()).deadLettered).toBe(0);
});

test('a trace context is honoured only on a sealed job: an unsealed one run by acceptUnsealedEntries starts a trace of its own', async () => {
  const handled: string[] = [];
  const { worker } = await setup(
    (event) => {
      handled.push(event.id);
    },
    { acceptUnsealedEntries: true },
  );
  const traceId = '0af7651916cd43dd8448eb211c80319c';
  const entry = { event: createTestEvent('user.created'), receivedAt: Date.now(), secretIndex: 0 };
  // A door before seals wrote it, or anyone with the queue's Redis: its trace context is not vouched for.
  await worker.queue.add('event', { ...entry, traceparent: `00-${traceId}-b7ad6b7169203331-01` } as never, {
    jobId: 'e.unsealed',
    attempts: 2 ** 31 - 1,
    backoff: { type: 'service-webhooks' },
  });
  await waitUntil('the run to end', () => spansNamed('webhook.inbox.run').length === 1, 10_000);
  const run = otel.span('webhook.inbox.run');
  expect(handled).toEqual([entry.event.id]);
  expect(run.parentSpanContext).toBeUndefined();
  expect(run.spanContext().traceId).not.toBe(traceId);
});

test("each failed attempt is an ERROR span of the door's trace with the handler's own error; the last one counts a dead letter", async () => {
  const { door } = await setup(
    () => {
      throw new RangeError('ledger is closed');
    },
    { attempts: 3 },
  );
  expect((await deliver(door.url, createTestEvent('payment.failed'))).status).toBe(200);
  await collectUntil(
    'the dead letter to be counted',
    () => otel.count('webhook.inbox.runs', { 'webhook.outcome': 'dead_lettered' }) === 1,
  );

  const delivery = otel.span('webhook.delivery');
  const runs = spansNamed('webhook.inbox.run');
  expect(runs.map((run) => run.attributes['webhook.attempt'])).toEqual([1, 2, 3]);
  for (const run of runs) {
    expect(run.spanContext().traceId).toBe(delivery.spanContext().traceId);
    expect(parentOf(run)).toBe(delivery.spanContext().spanId);
    expect(run.attributes).toMatchObject({ 'webhook.outcome': 'failed', 'error.type': 'handler_failed' });
    expect(run.status).toEqual({ code: SpanStatusCode.ERROR, message: 'handler_failed' });
    const exceptions = run.events.filter((e) => e.name === 'exception');
    expect(exceptions).toHaveLength(1);
    expect(exceptions[0]!.attributes).toMatchObject({
      'exception.type': 'RangeError',
      'exception.message': 'ledger is closed',
    });
    expect(String(exceptions[0]!.attributes?.['exception.stacktrace'])).toContain('telemetry.test.ts');
  }
  expect(otel.count('webhook.inbox.runs', { 'webhook.outcome': 'failed' })).toBe(3);
  expect(
    otel.count('webhook.inbox.runs', {
      'webhook.outcome': 'dead_lettered',
      'webhook.event.type': 'payment.failed',
    }),
  ).toBe(1);
  expect(otel.count('webhook.inbox.runs', { 'webhook.outcome': 'handled' })).toBe(0);
});

test("a replayed dead letter runs in a new trace, linked to the door's span", async () => {
  let down = true;
  const { door, worker, queueName } = await setup(
    () => {
      if (down) throw new Error('crm.example: 503 Service Unavailable');
    },
    { attempts: 1 },
  );
  const event = createTestEvent('user.created');
  expect((await deliver(door.url, event)).status).toBe(200);
  await waitUntil('the dead letter', async () => (await worker.stats()).deadLettered === 1, 10_000);

  down = false;
  const admin = inboxAdmin({ connection: redis.url, queueName });
  cleanups.push(() => admin.close());
  const [letter] = (await admin.list()).items;
  // The replay job carries the door's traceparent: the entry it was made from held it.
  expect(letter!.entry.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
  const replay = await admin.replay(letter!.jobId);
  await waitUntil('the replay to run', () => spansNamed('webhook.inbox.run').length === 2, 10_000);

  const door0 = otel.span('webhook.delivery').spanContext();
  const replayed = spansNamed('webhook.inbox.run').find(
    (run) => run.attributes['webhook.replay.id'] === replay.replayId,
  )!;
  expect(replayed.attributes).toMatchObject({ 'webhook.outcome': 'handled', 'webhook.attempt': 1 });
  expect(replayed.spanContext().traceId).not.toBe(door0.traceId);
  expect(replayed.parentSpanContext).toBeUndefined();
  expect(replayed.links).toHaveLength(1);
  expect(replayed.links[0]!.context).toMatchObject({ traceId: door0.traceId, spanId: door0.spanId });
  expect(trace.isSpanContextValid(replayed.links[0]!.context)).toBe(true);
});

test('the gauges are read when the SDK collects: depth, oldest wait, dead letters; none after close', async () => {
  const { door, worker, queueName, reads } = await setup(
    (event) => {
      if (event.type === 'payment.failed') throw new Error('poison');
    },
    { attempts: 1 },
  );
  const gauge = (name: string) => {
    const points = otel.points(name).filter((p) => p.attributes['messaging.destination.name'] === queueName);
    expect(points).toHaveLength(1);
    return points[0]!.value as number;
  };
  // Nothing runs the queue while the events arrive.
  await worker.worker.pause();
  const events = [
    createTestEvent('user.created'),
    createTestEvent('user.created'),
    createTestEvent('payment.failed'),
  ];
  for (const event of events) expect((await deliver(door.url, event)).status).toBe(200);
  await sleep(50);
  await otel.collect();
  expect(gauge('webhook.inbox.depth')).toBe(3);
  expect(gauge('webhook.inbox.oldest_age')).toBeGreaterThan(0);
  expect(gauge('webhook.inbox.oldest_age')).toBeLessThan(10);
  expect(gauge('webhook.inbox.dead_letters')).toBe(0);

  worker.worker.resume();
  // A run is counted when it ends, a moment before BullMQ moves its job out of `active`: a collection
  // between the two reads the counters complete and the job still in the depth (a loaded CI machine
  // widened that moment past a collection). The gauges are judged at the collection that follows.
  await collectUntil(
    'the queue to be run, and the gauges to read it drained',
    () =>
      otel.count('webhook.inbox.runs', { 'webhook.outcome': 'handled' }) === 2 &&
      otel.count('webhook.inbox.runs', { 'webhook.outcome': 'dead_lettered' }) === 1 &&
      gauge('webhook.inbox.depth') === 0,
  );
  expect(gauge('webhook.inbox.depth')).toBe(0);
  expect(gauge('webhook.inbox.oldest_age')).toBe(0);
  expect(gauge('webhook.inbox.dead_letters')).toBe(1);

  const before = reads();
  expect(before).toBeGreaterThan(0);
  await worker.close();
  await otel.collect();
  await otel.collect();
  expect(reads()).toBe(before);
});

test('the counters say what was sent and handled: queued per new delivery, handled per event run', async () => {
  const handled = new Map<string, number>();
  const { door, worker } = await setup(
    (event) => {
      handled.set(event.id, (handled.get(event.id) ?? 0) + 1);
    },
    { concurrency: 10 },
  );
  const events = Array.from({ length: 30 }, (_, i) =>
    createTestEvent(i % 3 === 0 ? 'payment.succeeded' : 'user.created'),
  );
  const answers = await inParallel(events, 10, (event) => deliver(door.url, event));
  // The sender's retries of five of them: answered as duplicates, queued no more.
  const again = await inParallel(events.slice(0, 5), 5, (event) => deliver(door.url, event));
  expect(answers.every((a) => a.status === 200 && !a.duplicate)).toBe(true);
  expect(again.every((a) => a.status === 200 && a.duplicate)).toBe(true);
  await waitUntil('every event to be handled', () => handled.size === events.length, 15_000);
  await waitUntil('the queue to drain', async () => (await worker.stats()).depth === 0, 5_000);

  await otel.collect();
  expect(otel.count('webhook.deliveries', { 'webhook.outcome': 'queued' })).toBe(events.length);
  expect(otel.count('webhook.deliveries', { 'webhook.outcome': 'duplicate' })).toBe(5);
  expect(otel.count('webhook.deliveries')).toBe(events.length + 5);
  const runs = [...handled.values()].reduce((sum, n) => sum + n, 0);
  expect(runs).toBe(events.length);
  expect(otel.count('webhook.inbox.runs', { 'webhook.outcome': 'handled' })).toBe(runs);
  expect(otel.count('webhook.inbox.runs')).toBe(runs);
  expect(
    otel.count('webhook.inbox.runs', {
      'webhook.outcome': 'handled',
      'webhook.event.type': 'payment.succeeded',
    }),
  ).toBe(10);
  // One trace per event: every run is the child of its own delivery.
  const deliveries = new Map(
    spansNamed('webhook.delivery')
      .filter((span) => span.attributes['webhook.outcome'] === 'queued')
      .map((span) => [span.spanContext().spanId, span.attributes['webhook.event.id']]),
  );
  for (const run of spansNamed('webhook.inbox.run')) {
    expect(deliveries.get(parentOf(run)!)).toBe(run.attributes['webhook.event.id']);
  }
});

test("a Redis outage does not hold a collection up: the worker's gauges are given up, the counters still come", async () => {
  const own = await RedisServer.start();
  cleanups.push(() => own.destroy());
  const { door, worker, reads } = await setup(() => {}, { redisUrl: own.url });
  // Redis is back before the worker and the door close, since they close through it; the worker
  // closes without waiting, as a graceful BullMQ close called while its blocking connection is still
  // reconnecting hangs (with or without telemetry).
  cleanups.push(() => worker.close(true));
  cleanups.push(() => own.start());
  expect((await deliver(door.url, createTestEvent('user.created'))).status).toBe(200);
  await collectUntil(
    'the run',
    () => otel.count('webhook.inbox.runs', { 'webhook.outcome': 'handled' }) === 1,
  );

  await own.stop();
  const before = reads();
  const started = performance.now();
  // The harness's reader collects with no timeout of its own, as a Prometheus scrape does: the
  // worker's client waits for Redis to come back (BullMQ needs it to), so only the plug-in's own
  // bound on the read lets the collection end.
  await otel.collect();
  expect(performance.now() - started).toBeLessThan(5_000);
  expect(reads()).toBe(before + 1);
  expect(otel.count('webhook.deliveries', { 'webhook.outcome': 'queued' })).toBe(1);
  expect(otel.count('webhook.inbox.runs', { 'webhook.outcome': 'handled' })).toBe(1);
});
