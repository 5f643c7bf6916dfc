/**
 * Flow control on SQS (fauxqs, the emulator the SQS tests use): SQS keeps no state a worker could
 * share, so the rate and the per-key slots live where the worker is told, here the receiver's
 * `RedisStore` on a real Redis (`flowControl: store`). The scenarios are in
 * test/support/flow-control-scenarios.ts; this file adds what only SQS has: no `flowControl`, no
 * start; the shared state down, every entry deferred, none run unthrottled, none dead-lettered.
 */
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { createWebhooks, MemoryStore } from 'service-webhooks';
import { RedisFlowControl, RedisStore } from 'service-webhooks/redis';
import { sqsInbox, startSqsWorker } from 'service-webhooks/sqs';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { flowControlScenarios } from '../support/flow-control-scenarios.js';
import { RedisServer } from '../support/redis-servers.js';
import { waitUntil } from '../support/wait-until.js';
import { createQueues, type Fauxqs, SECRET, startSqs, uniqueName } from './support.js';

let sqs: Fauxqs;
let redis: RedisServer;
let client: Redis;

beforeAll(async () => {
  [sqs, redis] = await Promise.all([startSqs(), RedisServer.start()]);
  client = new Redis(redis.url);
});

afterAll(async () => {
  client?.disconnect();
  await redis?.destroy();
  await sqs?.stop();
});

describe('SQS', () => {
  flowControlScenarios('SQS', async () => {
    const sqsClient = sqs.client();
    const queues = await createQueues(sqsClient, 'flow');
    const store = new RedisStore({ client, prefix: `${uniqueName('flow')}:` });
    return {
      inbox: sqsInbox({ client: sqsClient, queueUrl: queues.queueUrl }),
      countsThrottled: false,
      async startWorker(webhooks, options) {
        const worker = startSqsWorker(webhooks, {
          client: sqsClient,
          queueUrl: queues.queueUrl,
          waitTimeSeconds: 1,
          visibilityTimeoutSeconds: 10,
          monitor: false,
          flowControl: store,
          ...options,
        });
        await worker.waitUntilReady();
        return worker;
      },
      async close() {
        await queues.delete();
      },
    };
  });
});

test('SQS: rate or concurrencyPerKey without flowControl does not start (SQS keeps no shared state)', () => {
  const webhooks = createWebhooks({ secret: SECRET, store: new MemoryStore() });
  const base = { client: sqs.client(), queueUrl: 'http://127.0.0.1:1/000000000000/inbox' };
  expect(() => startSqsWorker(webhooks, { ...base, rate: { max: 6, perMs: 1_000 } })).toThrow(/flowControl/);
  expect(() =>
    startSqsWorker(webhooks, { ...base, concurrencyPerKey: { key: (entry) => entry.event.type, max: 2 } }),
  ).toThrow(/flowControl/);
  expect(() =>
    startSqsWorker(webhooks, {
      ...base,
      rate: { max: 0, perMs: 1_000 },
      flowControl: new RedisFlowControl({ client }),
    }),
  ).toThrow(/rate\.max/);
});

test('SQS: with the shared state down, entries are deferred (no attempt spent, none dead-lettered, none run) and a warning is said once', async () => {
  const sqsClient = sqs.client();
  const queues = await createQueues(sqsClient, 'flow-down');
  // A Redis nobody listens on: every call fails at once.
  const port = await closedPort();
  const down = new Redis({
    port,
    host: '127.0.0.1',
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    lazyConnect: true,
  });
  down.on('error', () => {});
  const warnings: string[] = [];
  const runs: number[] = [];
  const webhooks = createWebhooks({ secret: SECRET, store: new MemoryStore() });
  webhooks.on('payment.succeeded', (_event, ctx) => {
    runs.push(ctx.attempt);
  });
  const worker = startSqsWorker(webhooks, {
    client: sqsClient,
    queueUrl: queues.queueUrl,
    attempts: 1,
    waitTimeSeconds: 1,
    monitor: false,
    rate: { max: 100, perMs: 1_000 },
    flowControl: new RedisFlowControl({ client: down }),
    logger: {
      info: () => {},
      warn: (_record, message) => void warnings.push(String(message)),
      error: () => {},
    },
  });
  try {
    await worker.waitUntilReady();
    const door = createWebhooks({
      secret: SECRET,
      store: new MemoryStore(),
      inbox: sqsInbox({ client: sqsClient, queueUrl: queues.queueUrl }),
    });
    for (let index = 0; index < 3; index++)
      expect((await deliver(door, createTestEvent('payment.succeeded'), { secret: SECRET })).status).toBe(
        200,
      );
    // Received, refused a slot, hidden again: in flight, not dead-lettered, never run.
    await waitUntil('the three messages deferred', async () => (await worker.stats()).active === 3, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(runs).toEqual([]);
    const stats = await worker.stats();
    expect(stats.deadLettered).toBe(0);
    expect(stats.depth).toBe(3);
    expect(warnings.filter((warning) => warning.includes('flow-control state unreachable'))).toHaveLength(1);
  } finally {
    await worker.close();
    down.disconnect();
    await queues.delete();
  }
});

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
