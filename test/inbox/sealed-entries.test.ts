/**
 * Issue 45, item 3, on real Redis and BullMQ: whoever can write to the queue's Redis (a GRANT, an ACL,
 * often broader than holding the webhook secret) cannot make a handler act on an event the service
 * never sent. A job made by hand, a door's job edited in place (HSET of its data), and a trace context
 * added to one are each dead-lettered on their first attempt as `unauthenticated_inbox_entry`,
 * reported, with no handler run; the door's own jobs run. Entries of a door before seals run only
 * with `acceptUnsealedEntries`.
 */
import { Redis } from 'ioredis';
import {
  createWebhooks,
  EventDeadLetteredError,
  type InboxEntry,
  MemoryStore,
  type WebhookError,
  type Webhooks,
} from 'service-webhooks';
import { bullmqInbox, startInboxWorker } from 'service-webhooks/bullmq';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import { RedisServer } from '../support/redis-servers.js';
import { waitUntil } from '../support/wait-until.js';
import { SECRET, uniqueName } from './support.js';

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

/** A door on the queue, and a way to start a worker on it later (so jobs can be edited first). */
async function setup() {
  const queueName = uniqueName('sealed');
  const inbox = bullmqInbox({ connection: redis.url, queueName });
  cleanups.push(() => inbox.close());
  const door = createWebhooks({ secret: SECRET, store: new MemoryStore(), inbox });
  const amounts = new Map<string, unknown>();
  const errors: WebhookError[] = [];
  const webhooks: Webhooks = createWebhooks({ secret: SECRET, store: new MemoryStore() })
    .onAny((event) => {
      amounts.set(event.id, (event.data as { amount?: unknown }).amount);
    })
    .onError((error) => {
      errors.push(error);
    });
  const start = async (options: { acceptUnsealedEntries?: boolean } = {}) => {
    const worker = startInboxWorker(webhooks, {
      connection: redis.url,
      queueName,
      monitor: false,
      attempts: 25,
      backoff: [60_000],
      ...options,
    });
    cleanups.push(() => worker.close());
    await worker.waitUntilReady();
    return worker;
  };
  /** The door's job of `event`: its Redis key and its data as stored. */
  const doorJob = async (event: { readonly id: string }) => {
    const jobs = await inbox.queue.getJobs(['waiting']);
    const job = jobs.find((candidate) => candidate.data.event.id === event.id)!;
    return {
      key: `bull:${queueName}:${job.id}`,
      data: JSON.parse((await client.hget(`bull:${queueName}:${job.id}`, 'data'))!),
    };
  };
  return { queueName, inbox, door, amounts, errors, start, doorJob };
}

const payment = (amount: number) => {
  const event = createTestEvent('payment.succeeded');
  return { ...event, data: { ...event.data, amount } };
};

/** Wait until `count` jobs are dead-lettered; every one after one attempt, for an unauthenticated entry. */
async function expectRefused(
  worker: Awaited<ReturnType<Awaited<ReturnType<typeof setup>>['start']>>,
  errors: WebhookError[],
  count: number,
) {
  await waitUntil(
    'the forged jobs to be dead-lettered',
    async () => (await worker.stats()).deadLettered === count,
    10_000,
  );
  for (const job of await worker.queue.getFailed()) {
    expect(job.attemptsMade).toBe(1);
    expect(job.failedReason).toMatch(/^unauthenticated_inbox_entry: /);
  }
  const refused = errors.filter((error) => error.code === 'unauthenticated_inbox_entry');
  expect(refused).toHaveLength(count);
  const deadLettered = errors.filter((error) => error instanceof EventDeadLetteredError);
  expect(deadLettered.map((error) => (error.cause as WebhookError).code)).toEqual(
    Array(count).fill('unauthenticated_inbox_entry'),
  );
}

test('a job made by hand (payment.succeeded, 999999999) runs no handler: dead-lettered at once, reported', async () => {
  const { inbox, amounts, errors, start } = await setup();
  const forged = payment(999999999);
  await inbox.queue.add('event', { event: forged, receivedAt: Date.now(), secretIndex: 0 } as never, {
    jobId: 'e.forged',
    attempts: 2 ** 31 - 1,
    backoff: { type: 'service-webhooks' },
  });
  const worker = await start();
  await expectRefused(worker, errors, 1);
  expect(amounts.has(forged.id)).toBe(false);
});

test("the door's job edited in place (its amount, or a trace context added) runs no handler; the door's own runs", async () => {
  const { door, amounts, errors, start, doorJob } = await setup();
  const [edited, retraced, genuine] = [payment(100), payment(200), payment(300)];
  for (const event of [edited, retraced, genuine])
    expect((await deliver(door, event, { secret: SECRET })).status).toBe(200);
  const editedJob = await doorJob(edited);
  expect(editedJob.data.seal).toMatch(/^v1\./);
  editedJob.data.event.data.amount = 999999999;
  await client.hset(editedJob.key, 'data', JSON.stringify(editedJob.data));
  const retracedJob = await doorJob(retraced);
  // Flags 00: an attacker's trace, with sampling switched off.
  retracedJob.data.traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00';
  await client.hset(retracedJob.key, 'data', JSON.stringify(retracedJob.data));

  const worker = await start();
  await expectRefused(worker, errors, 2);
  await waitUntil('the genuine payment to run', () => amounts.has(genuine.id), 10_000);
  expect([...amounts]).toEqual([[genuine.id, 300]]);
});

test('acceptUnsealedEntries runs the jobs of a door before seals, and still refuses an edited sealed one', async () => {
  const { inbox, door, amounts, errors, start, doorJob } = await setup();
  const old = payment(1);
  const entry: InboxEntry = { event: old, receivedAt: Date.now(), secretIndex: 0 };
  await inbox.queue.add('event', entry as never, {
    jobId: 'e.before-seals',
    attempts: 2 ** 31 - 1,
    backoff: { type: 'service-webhooks' },
  });
  const edited = payment(2);
  expect((await deliver(door, edited, { secret: SECRET })).status).toBe(200);
  const job = await doorJob(edited);
  job.data.event.data.amount = 999999999;
  await client.hset(job.key, 'data', JSON.stringify(job.data));

  const worker = await start({ acceptUnsealedEntries: true });
  await expectRefused(worker, errors, 1);
  await waitUntil('the unsealed job to run', () => amounts.has(old.id), 10_000);
  expect([...amounts]).toEqual([[old.id, 1]]);
});
