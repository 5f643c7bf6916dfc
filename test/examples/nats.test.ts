/**
 * examples/nats on the built package, against the machine's NATS with JetStream (NATS_URL, otherwise
 * 127.0.0.1:4222) and a Redis of the test's own for the store: the web process acknowledges a delivery
 * while no worker runs (the event waits in the stream), the worker process then runs its handler once,
 * and a retry of the delivery is a duplicate. The streams are the test's own, deleted afterwards.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, test } from 'vitest';
import { RedisServer } from '../support/redis-servers.js';
import { expectQueuedThenHandledOnce } from './run-example.js';

const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const stream = `example-${crypto.randomUUID().slice(0, 8)}`;
let redis: RedisServer;

beforeAll(async () => {
  redis = await RedisServer.start();
  // startExample hands the examples this process's environment (each test file runs in its own worker).
  process.env.REDIS_URL = redis.url;
  process.env.NATS_URL = natsUrl;
  process.env.INBOX_STREAM = stream;
});

afterAll(async () => {
  const connection = await connect({ servers: natsUrl });
  const jsm = await jetstreamManager(connection);
  for (const name of [stream, `${stream}-dead-letters`]) await jsm.streams.delete(name).catch(() => false);
  await connection.close();
  await redis?.destroy();
});

test('examples/nats: the web process queues while no worker runs; the worker handles it once (built package)', async () => {
  await expectQueuedThenHandledOnce('examples/nats/web.ts', 'examples/nats/worker.ts', 1_000);
}, 60_000);
