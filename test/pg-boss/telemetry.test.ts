/**
 * The pg-boss inbox with the receiver's openTelemetry() plug-in: each worker run joins the delivery's
 * trace (the door's traceparent rides in the job's data), a dead letter is counted, and the inbox's
 * gauges (depth, oldest wait, dead letters) are read from PostgreSQL when the SDK collects, and no
 * longer after the worker closed.
 */
import { createWebhooks, MemoryStore } from 'service-webhooks';
import { openTelemetry } from 'service-webhooks/opentelemetry';
import { pgBossInbox, startPgBossWorker } from 'service-webhooks/pg-boss';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { type OpenTelemetryHarness, startOpenTelemetry } from '../support/opentelemetry.js';
import { waitUntil } from '../support/wait-until.js';
import { BOSS_VERSIONS, dropSchema, type TestBoss, uniqueQueue, uniqueSchema } from './support.js';

const SECRET = 'whsec_pgboss_telemetry';
const schema = uniqueSchema();
let boss: TestBoss;
let otel: OpenTelemetryHarness;

beforeAll(async () => {
  boss = await BOSS_VERSIONS[0]!.start(schema);
  otel = startOpenTelemetry();
});
afterAll(async () => {
  await otel?.shutdown();
  await boss?.stop({ graceful: false, wait: true });
  await dropSchema(schema);
});

test("runs join the door's trace, a dead letter is counted, the gauges are read on collection", async () => {
  const queue = uniqueQueue('telemetry');
  const { tracerProvider, meterProvider } = otel;
  const store = new MemoryStore();
  const door = createWebhooks({
    secret: SECRET,
    store,
    inbox: pgBossInbox({ boss, queue }),
    telemetry: openTelemetry({ tracerProvider, meterProvider }),
  });
  door.onError(() => {});
  const consumer = createWebhooks({
    secret: SECRET,
    store,
    telemetry: openTelemetry({ tracerProvider, meterProvider }),
  });
  const errors: string[] = [];
  consumer.onError((error) => {
    errors.push(error.code);
  });
  consumer.on('payment.failed', () => {
    throw new RangeError('ledger is closed');
  });
  consumer.on('user.created', () => {});
  const gauge = async (name: string) => {
    await otel.collect();
    const points = otel.points(name).filter((p) => p.attributes['messaging.destination.name'] === queue);
    return points.map((point) => point.value as number);
  };

  // Two events queued before any worker runs; one handled, one dead-lettered after two attempts.
  for (const event of [createTestEvent('user.created'), createTestEvent('payment.failed')]) {
    const body = JSON.stringify(event);
    const answer = await door.handle({ body, headers: { 'x-service-signature': signPayload(body, SECRET) } });
    expect(answer.status).toBe(200);
  }
  const worker = await startPgBossWorker(consumer, {
    boss,
    queue,
    schema,
    attempts: 2,
    backoff: [200],
    pollIntervalMs: 50,
    monitor: false,
  });
  await waitUntil('the dead letter', () => errors.includes('event_dead_lettered'));
  await waitUntil('the gauges to settle', async () => (await gauge('webhook.inbox.dead_letters'))[0] === 1);
  expect(await gauge('webhook.inbox.depth')).toEqual([0]);
  expect(await gauge('webhook.inbox.oldest_age')).toEqual([0]);

  const delivery = otel.spans().filter((span) => span.name === 'webhook.delivery');
  const runs = otel.spans().filter((span) => span.name === 'webhook.inbox.run');
  expect(runs.map((run) => run.attributes['webhook.attempt']).sort()).toEqual([1, 1, 2]);
  for (const run of runs) {
    const parent = delivery.find((span) => span.spanContext().traceId === run.spanContext().traceId);
    expect(parent, 'each run is in the trace of the delivery that queued it').toBeDefined();
    expect(run.parentSpanContext?.spanId).toBe(parent!.spanContext().spanId);
  }
  expect(
    otel.count('webhook.inbox.runs', {
      'webhook.outcome': 'dead_lettered',
      'webhook.event.type': 'payment.failed',
    }),
  ).toBe(1);

  // Closed, the worker reads PostgreSQL no more: an event queued now is not seen (the SDK may keep
  // reporting the last value it was given, never a new one).
  await worker.close();
  const body = JSON.stringify(createTestEvent('user.created'));
  expect(
    (await door.handle({ body, headers: { 'x-service-signature': signPayload(body, SECRET) } })).status,
  ).toBe(200);
  expect(await gauge('webhook.inbox.depth')).not.toContain(1);
});
