/**
 * The door while the queue's Redis is down, hung, or not up yet: every delivery is answered 503
 * inbox_unavailable (with Retry-After) within the deadline, and no delivery is answered 200 unless its
 * event was written. The queue's Redis runs with `appendfsync always`, as the docs advise, so an
 * acknowledged event survives Redis being killed; the store runs on a Redis of its own, so the
 * queue's outage is what the door meets.
 */
import { Redis } from 'ioredis';
import { createTestEvent } from 'service-webhooks/testing';
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import { eventJobId } from '../../src/bullmq/job-data.js';
import { RedisServer } from '../support/redis-servers.js';
import { waitUntil } from '../support/wait-until.js';
import { type Answer, type Door, deliver, startDoor, uniqueName } from './support.js';

let storeRedis: RedisServer;
let queueRedis: RedisServer;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  storeRedis = await RedisServer.start();
  queueRedis = await RedisServer.start(['--appendonly', 'yes', '--appendfsync', 'always']);
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  if (!queueRedis.running) await queueRedis.start();
});

afterAll(async () => {
  await storeRedis?.destroy();
  await queueRedis?.destroy();
});

/** The deadline of a refusal: the receiver's storeTimeoutMs (2 s by default) and a margin. */
const DEADLINE_MS = 2_500;

async function door(): Promise<Door & { queueName: string }> {
  const queueName = uniqueName('outage');
  const started = await startDoor({
    redisUrl: storeRedis.url,
    queueRedisUrl: queueRedis.url,
    queueName,
    storePrefix: `${queueName}:store:`,
  });
  cleanups.push(() => started.close());
  return { ...started, queueName };
}

/** The job of an event the door wrote, read from a fresh connection (the door's may be down). */
async function jobExists(queueName: string, eventId: string, scopeKey: string): Promise<boolean> {
  const client = new Redis(queueRedis.url);
  try {
    return (await client.exists(`bull:${queueName}:${eventJobId(scopeKey.replace('EVENT', eventId))}`)) === 1;
  } finally {
    client.disconnect();
  }
}

function expectRefused(answer: Answer): void {
  expect(answer.status).toBe(503);
  expect(JSON.parse(answer.body).error.code).toBe('inbox_unavailable');
  expect(answer.ms).toBeLessThan(DEADLINE_MS);
}

test('Redis killed under load: 503 within the deadline, and every event answered 200 is in the queue', async () => {
  const { url, inbox, queueName, errors } = await door();
  // The dedup key of an event in this door's scope, learnt from a first event's job id.
  const probe = createTestEvent('user.created');
  expect((await deliver(url, probe)).status).toBe(200);
  const [probeJob] = await inbox.queue.getJobs(['waiting']);
  const scopeKey = decodeURIComponent(probeJob!.id!.slice(2)).replace(probe.id, 'EVENT');

  const answers = new Map<string, Answer>();
  let sending = true;
  const events: ReturnType<typeof createTestEvent<'user.created'>>[] = [];
  const load = Promise.all(
    Array.from({ length: 8 }, async () => {
      while (sending) {
        const event = createTestEvent('user.created');
        events.push(event);
        const answer = await deliver(url, event);
        answers.set(event.id, answer);
        // Refusals come at once; a little pause keeps the outage from being thousands of them.
        if (answer.status !== 200) await new Promise((resolve) => setTimeout(resolve, 25));
      }
    }),
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
  await queueRedis.stop('SIGKILL');
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  await queueRedis.start();
  // ioredis reconnects by itself; deliveries are accepted again without a restart.
  const recovered = performance.now();
  await waitUntil(
    'deliveries to be acknowledged again',
    async () => (await deliver(url, createTestEvent('user.created'))).status === 200,
    15_000,
  );
  const recoveryMs = performance.now() - recovered;
  await new Promise((resolve) => setTimeout(resolve, 200));
  sending = false;
  await load;

  const all = [...answers.entries()];
  const refused = all.filter(([, answer]) => answer.status !== 200);
  const acknowledged = all.filter(([, answer]) => answer.status === 200);
  expect(refused.length).toBeGreaterThan(0);
  expect(acknowledged.length).toBeGreaterThan(0);
  for (const [, answer] of refused) expectRefused(answer);
  // Each refusal reached onError, with what the queue said.
  const unavailable = errors.filter((error) => error.code === 'inbox_unavailable');
  expect(unavailable.length).toBeGreaterThanOrEqual(refused.length); // and the probes' refusals
  expect(unavailable[0]!.cause).toBeInstanceOf(Error);
  expect(refused.every(([, answer]) => answer.body.length > 0)).toBe(true);
  // Durable: each acknowledged event's job survived Redis being killed.
  for (const [eventId] of acknowledged) expect(await jobExists(queueName, eventId, scopeKey)).toBe(true);
  // The sender retries what was refused: now accepted (not a duplicate: the claim was released).
  const byId = new Map(events.map((event) => [event.id, event]));
  const retries = await Promise.all(refused.map(([eventId]) => deliver(url, byId.get(eventId)!)));
  expect(retries.every((retry) => retry.status === 200 && !retry.duplicate)).toBe(true);
  for (const [eventId] of refused) expect(await jobExists(queueName, eventId, scopeKey)).toBe(true);
  console.log(
    `door outage: ${acknowledged.length} acknowledged, ${refused.length} refused (max ${Math.round(Math.max(...refused.map(([, a]) => a.ms)))} ms), recovered ${Math.round(recoveryMs)} ms after restart`,
  );
}, 60_000);

test('Redis hung (SIGSTOP): 503 within the deadline, accepted again once it resumes', async () => {
  const { url } = await door();
  expect((await deliver(url, createTestEvent('user.created'))).status).toBe(200);
  const info = await queueRedis.command('INFO', 'server');
  const pid = Number(/process_id:(\d+)/.exec(info)![1]);
  process.kill(pid, 'SIGSTOP');
  try {
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => deliver(url, createTestEvent('user.created'))),
    );
    for (const answer of answers) expectRefused(answer);
  } finally {
    process.kill(pid, 'SIGCONT');
  }
  await waitUntil(
    'deliveries to be acknowledged again',
    async () => (await deliver(url, createTestEvent('user.created'))).status === 200,
    10_000,
  );
}, 30_000);

test('Redis not up when the door starts: 503 at once, then 200 once it is', async () => {
  await queueRedis.stop('SIGKILL');
  const { url } = await door();
  const first = await deliver(url, createTestEvent('user.created'));
  expectRefused(first);
  // The wait for a first connection is bounded (readyTimeoutMs, 1 s).
  expect(first.ms).toBeGreaterThanOrEqual(900);
  await queueRedis.start();
  await waitUntil(
    'deliveries to be acknowledged',
    async () => (await deliver(url, createTestEvent('user.created'))).status === 200,
    15_000,
  );
}, 30_000);
