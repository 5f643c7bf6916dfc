/**
 * The BullMQ worker around Redis's own life: a graceful close right after the queue's Redis restarted
 * ends within its bound (BullMQ's own close could hang past a minute there), and a job BullMQ fails
 * for stalling too often (`maxStalledCount`) is a dead letter like any other: logged and reported
 * (the branch that counts it for telemetry), listed by the admin and counted by its figures. Each test runs its own redis-server.
 */
import { createWebhooks, MemoryStore, type WebhookError } from 'service-webhooks';
import { inboxAdmin, startInboxWorker } from 'service-webhooks/bullmq';
import { openTelemetry } from 'service-webhooks/opentelemetry';
import { createTestEvent } from 'service-webhooks/testing';
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import { startOpenTelemetry } from '../support/opentelemetry.js';
import { RedisServer } from '../support/redis-servers.js';
import { sealed } from '../support/sealed-entry.js';
import { waitUntil } from '../support/wait-until.js';
import { SECRET, uniqueName } from './support.js';

let redis: RedisServer;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  redis = await RedisServer.start();
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  if (!redis.running) await redis.start();
});

afterAll(async () => {
  await redis?.destroy();
});

type Logged = { level: string; message: string; record: Record<string, unknown> };

function capturingLogger(logged: Logged[]) {
  const capture =
    (level: string) =>
    (record: object, message?: string): void => {
      logged.push({ level, message: message ?? '', record: record as Record<string, unknown> });
    };
  return { info: capture('info'), warn: capture('warn'), error: capture('error') };
}

test('a graceful close right after the queue’s Redis restarted ends within closeTimeoutMs, its connections dropped, and says so', async () => {
  const queueName = uniqueName('restart');
  const logged: Logged[] = [];
  const webhooks = createWebhooks({ secret: SECRET, store: new MemoryStore() });
  webhooks.on('user.created', () => {});
  const worker = startInboxWorker(webhooks, {
    connection: redis.url,
    queueName,
    monitor: false,
    closeTimeoutMs: 2_000,
    logger: capturingLogger(logged),
  });
  cleanups.push(() => worker.close(true));
  await worker.waitUntilReady();
  // Down for 2 s, then back: BullMQ's own graceful close then waited over 60 s (120 s here).
  await redis.stop();
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  await redis.start();
  const started = performance.now();
  await worker.close();
  const tookMs = performance.now() - started;
  // closeTimeoutMs and a margin a loaded 2-core machine holds.
  expect(tookMs).toBeLessThan(2_000 + 6_000);
  // Closed in time by itself, or forced, and then it said so and left no connection behind.
  const forced = logged.filter(({ message }) => message.startsWith('webhook inbox: close took longer'));
  if (tookMs >= 2_000) expect(forced).toHaveLength(1);
  await waitUntil(
    'the worker’s connections to be gone',
    async () => (await redis.command('CLIENT', 'LIST')).trim().split('\n').length === 1,
    5_000,
  );
}, 60_000);

test('a job BullMQ fails for stalling (maxStalledCount) is a dead letter as any other: logged, counted, reported, listed', async () => {
  const queueName = uniqueName('stalled');
  const store = new MemoryStore();
  // A worker whose handler never ends, closed by force: its job stays active, its lock expires.
  const stuck = createWebhooks({ secret: SECRET, store });
  stuck.on('user.created', () => new Promise<void>(() => {}));
  const first = startInboxWorker(stuck, {
    connection: redis.url,
    queueName,
    monitor: false,
    lockDurationMs: 1_000,
    // BullMQ checks a queue for stalls at most once per interval, whichever worker does: the same
    // settings on both.
    stalledIntervalMs: 300,
    maxStalledCount: 0,
  });
  cleanups.push(() => first.close(true));
  await first.waitUntilReady();
  const admin = inboxAdmin({ connection: redis.url, queueName });
  cleanups.push(() => admin.close());
  await first.queue.add(
    'event',
    // Sealed as the door seals: an unsealed job is dead-lettered at once and never stalls.
    (await sealed(
      { event: createTestEvent('user.created'), receivedAt: Date.now(), secretIndex: 0 },
      SECRET,
    )) as never,
    { jobId: 'stalling-job', attempts: 3 },
  );
  await waitUntil('the job to run', async () => (await admin.stats()).active === 1, 10_000);
  await first.close(true);

  // The second worker's stall checker finds it, and with maxStalledCount 0 BullMQ fails it.
  const logged: Logged[] = [];
  const errors: WebhookError[] = [];
  // The openTelemetry() plug-in on an in-memory SDK: the dead-letter counter beside the gauge.
  const otel = startOpenTelemetry();
  cleanups.push(() => otel.shutdown());
  const { tracerProvider, meterProvider } = otel;
  const webhooks = createWebhooks({
    secret: SECRET,
    store,
    telemetry: openTelemetry({ tracerProvider, meterProvider }),
  });
  webhooks.on('user.created', () => {});
  webhooks.onError((error) => {
    errors.push(error);
  });
  const second = startInboxWorker(webhooks, {
    connection: redis.url,
    queueName,
    monitor: false,
    lockDurationMs: 1_000,
    stalledIntervalMs: 300,
    maxStalledCount: 0,
    logger: capturingLogger(logged),
  });
  cleanups.push(() => second.close(true));
  await second.waitUntilReady();
  await waitUntil(
    'the stalled job to be dead-lettered',
    async () => (await admin.stats()).deadLettered === 1,
    15_000,
  );
  await waitUntil(
    'the dead letter to be reported',
    () => errors.some((error) => error.code === 'event_dead_lettered'),
    5_000,
  );
  await otel.collect();
  const gauge = otel
    .points('webhook.inbox.dead_letters')
    .filter((point) => point.attributes['messaging.destination.name'] === queueName);
  expect(gauge.map((point) => point.value)).toEqual([1]);
  expect(otel.count('webhook.inbox.runs', { 'webhook.outcome': 'dead_lettered' })).toBe(1);
  const { items, total } = await admin.list();
  expect(total).toBe(1);
  expect(items[0]!.lastError).toContain('stalled');
  expect(logged.map(({ message }) => message)).toContain(
    'webhook inbox: event dead-lettered after its last attempt',
  );
});
