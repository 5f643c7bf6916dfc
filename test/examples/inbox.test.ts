/**
 * examples/inbox on the built package: the web process acknowledges a delivery while no worker runs
 * (the event waits in Redis), the worker process then runs its handler once, and a retry of the
 * delivery is a duplicate. Both processes run on a Redis of the test's own.
 */
import { afterAll, beforeAll, test } from 'vitest';
import { RedisServer } from '../support/redis-servers.js';
import { expectQueuedThenHandledOnce } from './run-example.js';

let redis: RedisServer;

beforeAll(async () => {
  redis = await RedisServer.start();
  // startExample hands the examples this process's environment (each test file runs in its own worker).
  process.env.REDIS_URL = redis.url;
  process.env.INBOX_QUEUE = `example-${crypto.randomUUID().slice(0, 8)}`;
});

afterAll(async () => {
  await redis?.destroy();
});

test('examples/inbox: the web process queues while no worker runs; the worker handles it once (built package)', async () => {
  await expectQueuedThenHandledOnce('examples/inbox/web.ts', 'examples/inbox/worker.ts', 500);
}, 60_000);
