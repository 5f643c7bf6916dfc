/**
 * The receiver's own retries, on real Redis and BullMQ with in-process workers: a downstream that
 * fails for a few seconds (the "fails for 5 minutes", scaled down) ends with every event
 * handled once after it recovers, none dead-lettered; a schedule too short for the outage
 * dead-letters every event (reported to onError), and a replay runs each once more.
 */
import { Redis } from 'ioredis';
import {
  createWebhooks,
  EventDeadLetteredError,
  type HandlerContext,
  type WebhookError,
  type WebhookEvent,
} from 'service-webhooks';
import { type InboxBackoff, inboxAdmin, startInboxWorker } from 'service-webhooks/bullmq';
import { RedisStore } from 'service-webhooks/redis';
import { createTestEvent } from 'service-webhooks/testing';
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import { inParallel } from '../support/in-parallel.js';
import { RedisServer } from '../support/redis-servers.js';
import { waitUntil } from '../support/wait-until.js';
import { type Door, deliver, failFastClient, SECRET, startDoor, uniqueName } from './support.js';

let redis: RedisServer;
let client: Redis;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  redis = await RedisServer.start();
  client = new Redis(redis.url);
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(async () => {
  client?.disconnect();
  await redis?.destroy();
});

interface Downstream {
  /** Until when (Date.now()) every call fails. */
  downUntil: number;
  /**
   * An outage this long from the downstream's first call (it sets `downUntil` then): timed from the
   * first attempt, not from the test's start, which on a loaded machine is seconds before it.
   */
  outageMs?: number;
  readonly runs: Map<string, { attempt: number; receivedAt: number }[]>;
  readonly failures: Map<string, number>;
}

/** A door and an in-process worker whose handler calls a downstream that may be down. */
async function setup(worker: { attempts: number; backoff: InboxBackoff }) {
  const queueName = uniqueName('retries');
  const storePrefix = `${queueName}:store:`;
  const door: Door = await startDoor({ redisUrl: redis.url, queueName, storePrefix });
  cleanups.push(() => door.close());
  const downstream: Downstream = { downUntil: 0, runs: new Map(), failures: new Map() };
  const errors: { error: WebhookError; event: WebhookEvent | undefined }[] = [];
  const logged: { record: Record<string, unknown>; message: string | undefined }[] = [];
  const log = (record: unknown, message?: string) => {
    logged.push({ record: record as Record<string, unknown>, message });
  };
  const storeClient = failFastClient(redis.url);
  const webhooks = createWebhooks({
    secret: SECRET,
    store: new RedisStore({ client: storeClient, prefix: storePrefix }),
    logger: { info: log, warn: log, error: log },
  });
  webhooks.onError((error, event) => {
    errors.push({ error, event });
  });
  webhooks.on('user.created', async (event, ctx: HandlerContext) => {
    if (downstream.outageMs !== undefined && downstream.downUntil === 0)
      downstream.downUntil = Date.now() + downstream.outageMs;
    if (Date.now() < downstream.downUntil) {
      downstream.failures.set(event.id, (downstream.failures.get(event.id) ?? 0) + 1);
      throw new Error('crm.example: 503 Service Unavailable');
    }
    const list = downstream.runs.get(event.id) ?? [];
    list.push({ attempt: ctx.attempt, receivedAt: ctx.receivedAt });
    downstream.runs.set(event.id, list);
  });
  const running = startInboxWorker(webhooks, {
    logger: { info: log, warn: log, error: log },
    connection: redis.url,
    queueName,
    concurrency: 20,
    monitor: false,
    ...worker,
  });
  cleanups.push(async () => {
    await running.close();
    storeClient.disconnect();
  });
  await running.waitUntilReady();
  return { door, downstream, errors, logged, worker: running, webhooks, queueName };
}

test('a downstream down for 4 s: every event is handled once after it recovers, none dead-lettered', async () => {
  const { door, downstream, errors, logged, worker } = await setup({
    attempts: 12,
    // 0.2, 0.6, 1.4, 3.0, 4.6, 6.2 s after the first attempt: past the outage within six attempts.
    backoff: [200, 400, 800, 1_600],
  });
  // From the first attempt: CI's loaded machine took so long to send the 200 events that the outage
  // ended before any event had failed three times.
  downstream.outageMs = 4_000;
  const events = Array.from({ length: 200 }, () => createTestEvent('user.created'));
  const sent = Date.now();
  const answers = await inParallel(events, 20, (event) => deliver(door.url, event));
  const acknowledged = Date.now();
  expect(answers.every((answer) => answer.status === 200 && !answer.duplicate)).toBe(true);

  await waitUntil('every event to be handled', () => downstream.runs.size === events.length, 20_000);
  await waitUntil('the queue to drain', async () => (await worker.stats()).depth === 0, 5_000);
  expect(Date.now()).toBeGreaterThanOrEqual(downstream.downUntil);
  for (const event of events) {
    const runs = downstream.runs.get(event.id)!;
    expect(runs).toHaveLength(1);
    // ctx.attempt is the queue's count: one more than the failures before it.
    expect(runs[0]!.attempt).toBe((downstream.failures.get(event.id) ?? 0) + 1);
    // ctx.receivedAt is when the door received the delivery, not when the worker ran it.
    expect(runs[0]!.receivedAt).toBeGreaterThanOrEqual(sent);
    expect(runs[0]!.receivedAt).toBeLessThanOrEqual(acknowledged);
  }
  expect([...downstream.failures.values()].some((failures) => failures >= 3)).toBe(true);
  const stats = await worker.stats();
  expect(stats).toMatchObject({ depth: 0, deadLettered: 0 });
  // Each failed attempt reached onError (from process) and the logger (with the next delay).
  const failed = [...downstream.failures.values()].reduce((sum, n) => sum + n, 0);
  expect(errors.filter(({ error }) => error.code === 'handler_failed')).toHaveLength(failed);
  const retries = logged.filter(({ message }) => message === 'webhook inbox: attempt failed; retrying');
  expect(retries).toHaveLength(failed);
  expect(retries[0]!.record).toMatchObject({ inbox: expect.any(String), eventType: 'user.created' });
  expect(typeof retries[0]!.record.nextAttemptInMs).toBe('number');
  expect(errors.some(({ error }) => error instanceof EventDeadLetteredError)).toBe(false);
});

test('a schedule shorter than the outage dead-letters each event, reported; a replay runs it once more', async () => {
  const { door, downstream, errors, logged, worker, queueName } = await setup({
    attempts: 3,
    backoff: [100],
  });
  downstream.downUntil = Number.POSITIVE_INFINITY;
  const events = Array.from({ length: 5 }, () => createTestEvent('user.created'));
  for (const event of events) expect((await deliver(door.url, event)).status).toBe(200);

  await waitUntil(
    'every event to be dead-lettered',
    async () => (await worker.stats()).deadLettered === 5,
    10_000,
  );
  expect(downstream.runs.size).toBe(0);
  for (const event of events) expect(downstream.failures.get(event.id)).toBe(3);
  const deadLettered = errors.filter(({ error }) => error instanceof EventDeadLetteredError);
  expect(deadLettered.map(({ event }) => event?.id).sort()).toEqual(events.map((event) => event.id).sort());
  const first = deadLettered[0]!.error as EventDeadLetteredError;
  expect(first.attempts).toBe(3);
  expect((first.cause as WebhookError).code).toBe('handler_failed');
  expect(logged.filter(({ message }) => message?.includes('dead-lettered'))).toHaveLength(5);

  const admin = inboxAdmin({ connection: redis.url, queueName });
  cleanups.push(() => admin.close());
  const page = await admin.list({ limit: 2 });
  expect(page.total).toBe(5);
  expect(page.items).toHaveLength(2);
  const rest = await admin.list({ offset: 2, limit: 10 });
  expect(rest.items).toHaveLength(3);
  const listed = [...page.items, ...rest.items];
  expect(new Set(listed.map((letter) => letter.eventId))).toEqual(new Set(events.map((event) => event.id)));
  // Newest first.
  const failedAt = listed.map((letter) => letter.failedAt!);
  expect([...failedAt].sort((a, b) => b - a)).toEqual(failedAt);
  const letter = (await admin.get(listed[0]!.jobId))!;
  expect(letter).toMatchObject({
    attempts: 3,
    eventType: 'user.created',
    lastError: 'handler_failed: crm.example: 503 Service Unavailable',
  });
  expect(letter.entry.event.id).toBe(letter.eventId);
  expect(letter.stacktrace.at(-1)).toContain('crm.example: 503 Service Unavailable');
  expect(letter.receivedAt).toBeLessThanOrEqual(letter.enqueuedAt);
  expect(letter.failedAt).toBeGreaterThanOrEqual(letter.lastAttemptAt!);

  // The downstream is back: replay one twice (a retried command), then the rest.
  downstream.downUntil = 0;
  const [once, twice] = await Promise.all([
    admin.replay(letter.jobId),
    admin.replay(letter.jobId).catch((e) => e),
  ]);
  expect(once.eventId).toBe(letter.eventId);
  if (!(twice instanceof Error)) expect(twice.replayId).toBe(once.replayId);
  const others = await admin.replayAll();
  expect(others).toHaveLength(4);
  await waitUntil('every replay to be handled', () => downstream.runs.size === 5, 10_000);
  await waitUntil('the queue to drain', async () => (await worker.stats()).depth === 0, 5_000);
  for (const event of events) expect(downstream.runs.get(event.id)).toHaveLength(1);
  expect(await admin.list()).toMatchObject({ total: 0, items: [] });
});

test('a replay runs the handlers once more even though the event was handled; each replay once', async () => {
  const { door, downstream, worker, webhooks, queueName } = await setup({ attempts: 1, backoff: [100] });
  downstream.downUntil = Number.POSITIVE_INFINITY;
  const event = createTestEvent('user.created');
  expect((await deliver(door.url, event)).status).toBe(200);
  await waitUntil(
    'the event to be dead-lettered',
    async () => (await worker.stats()).deadLettered === 1,
    10_000,
  );

  const admin = inboxAdmin({ connection: redis.url, queueName });
  cleanups.push(() => admin.close());
  const [letter] = (await admin.list()).items;
  // Someone handled the event meanwhile (here: a direct run), so its id is recorded as handled.
  downstream.downUntil = 0;
  expect(await webhooks.process(letter!.entry)).toBe('handled');
  expect(await webhooks.process(letter!.entry)).toBe('duplicate');
  expect(downstream.runs.get(event.id)).toHaveLength(1);

  const replay = await admin.replay(letter!.jobId);
  await waitUntil('the replay to run', () => downstream.runs.get(event.id)!.length === 2, 10_000);
  await waitUntil('the queue to drain', async () => (await worker.stats()).depth === 0, 5_000);
  const job = await worker.queue.getJob(replay.jobId);
  expect(job?.returnvalue).toBe('handled');
  // The replay's own id is deduplicated: running it again is a duplicate.
  expect(await webhooks.process(letter!.entry, { replayId: replay.replayId })).toBe('duplicate');
  await expect(admin.replay(letter!.jobId)).rejects.toMatchObject({ code: 'not_found' });
  expect(downstream.runs.get(event.id)).toHaveLength(2);
  expect(await client.exists(`bull:${queueName}:${letter!.jobId}`)).toBe(0);
});

test('a poison job (no door wrote it) is dead-lettered on its first attempt, with the reason; no handler runs', async () => {
  const { downstream, errors, worker } = await setup({ attempts: 25, backoff: [60_000] });
  const event = createTestEvent('user.created') as unknown as Record<string, unknown>;
  const good = { receivedAt: Date.now(), secretIndex: 0 };
  const poisons: [string, unknown, RegExp][] = [
    ['no event', { ...good }, /no `event`/],
    ['an event that is not an object', { ...good, event: 42 }, /`event` must be a JSON object/],
    ['no created', { ...good, event: { ...event, created: undefined } }, /`event.created`/],
    [
      'a negative secretIndex',
      { ...good, event: { ...event, id: 'evt_poison_index' }, secretIndex: -3 },
      /`secretIndex`/,
    ],
  ];
  // Written as a hand-made job (or a door of another version) would be: straight to the queue.
  for (const [label, data] of poisons) {
    await worker.queue.add('event', data as never, {
      jobId: `e.poison-${label.replaceAll(' ', '-')}`,
      attempts: 2 ** 31 - 1,
      backoff: { type: 'service-webhooks' },
    });
  }
  await waitUntil(
    'every poison job to be dead-lettered',
    async () => (await worker.stats()).deadLettered === poisons.length,
    10_000,
  );
  expect(downstream.runs.size + downstream.failures.size).toBe(0);
  const deadLettered = errors.filter(({ error }) => error instanceof EventDeadLetteredError);
  expect(deadLettered).toHaveLength(poisons.length);
  for (const { error } of deadLettered) {
    expect((error as EventDeadLetteredError).attempts).toBe(1);
    expect((error.cause as WebhookError).code).toBe('invalid_inbox_entry');
  }
  const failed = await worker.queue.getFailed();
  for (const [label, , reason] of poisons) {
    const job = failed.find((candidate) => candidate.id === `e.poison-${label.replaceAll(' ', '-')}`)!;
    expect(job.attemptsMade).toBe(1);
    expect(job.failedReason).toMatch(/^invalid_inbox_entry: /);
    expect(job.failedReason).toMatch(reason);
  }
});
