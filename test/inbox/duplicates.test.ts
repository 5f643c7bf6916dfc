/**
 * Copies of one event, at the door and at the workers, on real Redis and BullMQ: the sender's
 * concurrent and later copies become one job; a second job of one event (a redelivery, a second write
 * after the first job was removed) completes as a duplicate; two workers holding copies at once run
 * the handler once, even when it outlives the claim's lease.
 */
import type { Redis } from 'ioredis';
import { type AnyWebhookEvent, createWebhooks, type InboxEntry } from 'service-webhooks';
import { type InboxWorker, startInboxWorker } from 'service-webhooks/bullmq';
import { RedisStore } from 'service-webhooks/redis';
import { createTestEvent } from 'service-webhooks/testing';
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import { RedisServer } from '../support/redis-servers.js';
import { sealed } from '../support/sealed-entry.js';
import { sleep } from '../support/sleep.js';
import { waitUntil } from '../support/wait-until.js';
import { deliver, failFastClient, SECRET, startDoor, uniqueName } from './support.js';

let redis: RedisServer;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  redis = await RedisServer.start();
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(async () => {
  await redis?.destroy();
});

const LEASE_SECONDS = 2;

/** An in-process worker on its own receiver and store client, as another process would have. */
async function worker(
  queueName: string,
  storePrefix: string,
  handler: (event: AnyWebhookEvent) => Promise<void>,
): Promise<InboxWorker> {
  const storeClient: Redis = failFastClient(redis.url);
  const webhooks = createWebhooks({
    secret: SECRET,
    store: new RedisStore({ client: storeClient, prefix: storePrefix }),
    leaseSeconds: LEASE_SECONDS,
    handlerTimeoutMs: 1_000,
  });
  webhooks.onError(() => {});
  webhooks.onAny(handler);
  const running = startInboxWorker(webhooks, {
    connection: redis.url,
    queueName,
    monitor: false,
    concurrency: 5,
  });
  cleanups.push(async () => {
    await running.close();
    storeClient.disconnect();
  });
  await running.waitUntilReady();
  return running;
}

test('the door turns concurrent and later copies of an event into one job, handled once', async () => {
  const queueName = uniqueName('dup-door');
  const storePrefix = `${queueName}:store:`;
  const door = await startDoor({ redisUrl: redis.url, queueName, storePrefix });
  cleanups.push(() => door.close());
  const event = createTestEvent('user.created');
  const copies = await Promise.all(Array.from({ length: 5 }, () => deliver(door.url, event)));
  expect(copies.filter((copy) => copy.status === 200 && !copy.duplicate)).toHaveLength(1);
  // The others found the first one writing (409, retried by the sender) or done (200, duplicate).
  for (const copy of copies) expect(copy.status === 409 || copy.status === 200).toBe(true);
  expect(await door.inbox.queue.getJobCounts('waiting')).toEqual({ waiting: 1 });
  const later = await deliver(door.url, event);
  expect(later).toMatchObject({ status: 200, duplicate: true });
  // The door writing one event twice (a first write that timed out but landed) adds nothing.
  const [job] = await door.inbox.queue.getJobs(['waiting']);
  await door.inbox.enqueue(job!.data, (job!.id as string).slice(2).replaceAll('%3A', ':'));
  expect(await door.inbox.queue.getJobCounts('waiting')).toEqual({ waiting: 1 });

  let runs = 0;
  const running = await worker(queueName, storePrefix, async () => {
    runs++;
  });
  await waitUntil('the event to be handled', async () => (await running.stats()).depth === 0, 10_000);
  expect(runs).toBe(1);
  expect((await deliver(door.url, event)).duplicate).toBe(true);
});

test('a second job of a handled event completes as a duplicate without running the handler', async () => {
  const queueName = uniqueName('dup-job');
  const storePrefix = `${queueName}:store:`;
  const door = await startDoor({ redisUrl: redis.url, queueName, storePrefix });
  cleanups.push(() => door.close());
  let runs = 0;
  await worker(queueName, storePrefix, async () => {
    runs++;
  });
  const event = createTestEvent('user.created');
  expect((await deliver(door.url, event)).status).toBe(200);
  await waitUntil('the event to be handled', () => runs === 1, 10_000);
  // As if the first job had been removed and the event written again under another job id.
  const entry: InboxEntry = await sealed({ event, receivedAt: Date.now(), secretIndex: 0 }, SECRET);
  const again = await door.inbox.queue.add('event', entry, { jobId: 'e.second-write' });
  await waitUntil('the second job to finish', async () => (await again.getState()) === 'completed', 10_000);
  expect((await door.inbox.queue.getJob('e.second-write'))?.returnvalue).toBe('duplicate');
  expect(runs).toBe(1);
});

test('two workers holding one event at once run its handler once, even past the lease', async () => {
  const queueName = uniqueName('dup-race');
  const storePrefix = `${queueName}:store:`;
  const door = await startDoor({
    redisUrl: redis.url,
    queueName,
    storePrefix,
    receiver: { leaseSeconds: LEASE_SECONDS, handlerTimeoutMs: 1_000 },
  });
  cleanups.push(() => door.close());
  const started: number[] = [];
  let finished = 0;
  // Longer than the lease: the claim is renewed while the handler runs.
  const slow = async () => {
    started.push(Date.now());
    await sleep(LEASE_SECONDS * 1000 * 2.5);
    finished++;
  };
  const a = await worker(queueName, storePrefix, slow);
  const b = await worker(queueName, storePrefix, slow);
  const event = createTestEvent('user.created');
  expect((await deliver(door.url, event)).status).toBe(200);
  await waitUntil('the handler to start', () => started.length === 1, 5_000);
  // A copy of the event as a second job once the first run has outlived its lease: what BullMQ does
  // when it hands a job out again whose worker it believes stalled.
  await sleep(LEASE_SECONDS * 1000 + 500);
  const entry: InboxEntry = await sealed({ event, receivedAt: Date.now(), secretIndex: 0 }, SECRET);
  const copy = await door.inbox.queue.add('event', entry, { jobId: 'e.copy' });
  await waitUntil('the copy to finish', async () => (await copy.getState()) === 'completed', 20_000);
  expect((await door.inbox.queue.getJob('e.copy'))?.returnvalue).toBe('duplicate');
  expect(started).toHaveLength(1);
  expect(finished).toBe(1);
  expect((await a.stats()).depth + (await b.stats()).depth).toBe(0);
}, 30_000);
