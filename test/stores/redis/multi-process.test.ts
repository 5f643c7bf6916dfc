/**
 * Two receiver processes, each with its own ioredis client and RedisStore, on one Redis (standalone,
 * then Cluster): concurrent copies of an event split between them run its handler exactly once.
 */
import { Cluster, Redis } from 'ioredis';
import { signPayload } from 'service-webhooks';
import { createTestEvent } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type ReceiverEnv, type ReceiverProcess, startReceiver } from '../../support/receiver-process.js';
import {
  type ClusterRedis,
  type StandaloneRedis,
  startCluster,
  startStandalone,
} from '../../support/redis-servers.js';

const SECRET = 'whsec_multi_process';

interface Delivery {
  readonly status: number;
  readonly duplicate: boolean;
  readonly receiver: number;
}

async function post(url: string, body: string, receiver: number): Promise<Delivery> {
  const response = await fetch(url, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', 'x-service-signature': signPayload(body, SECRET) },
  });
  await response.arrayBuffer();
  return {
    status: response.status,
    duplicate: response.headers.get('x-webhook-duplicate') === 'true',
    receiver,
  };
}

const topologies: {
  name: string;
  start: () => Promise<{
    env: Partial<ReceiverEnv>;
    counter: () => Redis | Cluster;
    stop: () => Promise<void>;
  }>;
}[] = [
  {
    name: 'standalone',
    async start() {
      const redis: StandaloneRedis = await startStandalone();
      return { env: { REDIS_URL: redis.url }, counter: () => new Redis(redis.url), stop: redis.stop };
    },
  },
  {
    name: 'Cluster',
    async start() {
      const redis: ClusterRedis = await startCluster();
      return {
        env: { REDIS_CLUSTER_NODES: redis.nodes.map((node) => `${node.host}:${node.port}`).join(',') },
        counter: () => new Cluster([...redis.nodes]),
        stop: redis.stop,
      };
    },
  },
];

for (const topology of topologies) {
  describe(`two receiver processes on one Redis (${topology.name})`, () => {
    const run = crypto.randomUUID();
    const counterKey = `sw-test-counts:{${run}}`;
    const prefix = `sw-test-${run}:`;
    let receivers: ReceiverProcess[] = [];
    let counter: Redis | Cluster;
    let stopRedis: () => Promise<void> = async () => {};

    beforeAll(async () => {
      const redis = await topology.start();
      stopRedis = redis.stop;
      counter = redis.counter();
      receivers = await Promise.all(
        [0, 1].map(() =>
          startReceiver({ SECRET, COUNTER_KEY: counterKey, STORE_PREFIX: prefix, ...redis.env }),
        ),
      );
    });

    afterAll(async () => {
      await Promise.all(receivers.map((receiver) => receiver.stop()));
      // Leave nothing behind in a Redis the tests were pointed at (REDIS_URL, REDIS_CLUSTER_NODES).
      if (counter) {
        await counter.del(counterKey);
        const masters = counter instanceof Cluster ? counter.nodes('master') : [counter];
        for (const node of masters) {
          const keys: string[] = [];
          for await (const batch of node.scanStream({ match: `${prefix}*`, count: 1_000 })) {
            keys.push(...(batch as string[]));
          }
          // One key per call: on a Cluster the keys of one node still span many slots.
          await Promise.all(keys.map((key) => node.del(key)));
        }
        counter.disconnect();
      }
      await stopRedis();
    });

    test('200 concurrent copies of one event, split between them: the handler runs once', async () => {
      // A handler that takes a moment keeps the claim in progress while the copies race.
      const event = createTestEvent('payment.succeeded', { data: { delayMs: 150 } });
      const body = JSON.stringify(event);
      const started = performance.now();
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) => post(receivers[i % 2]!.url, body, i % 2)),
      );
      const tookMs = Math.round(performance.now() - started);

      expect(await counter.hget(counterKey, event.id)).toBe('1');
      const handled = results.filter((r) => r.status === 200 && !r.duplicate);
      const duplicates = results.filter((r) => r.status === 200 && r.duplicate);
      const inProgress = results.filter((r) => r.status === 409);
      expect(handled).toHaveLength(1);
      expect(handled.length + duplicates.length + inProgress.length).toBe(200);
      console.log(
        `[${topology.name}] 200 copies of one event over 2 processes in ${tookMs} ms: 1 handled, ${duplicates.length} duplicate (200), ${inProgress.length} in progress (409); handler runs: 1`,
      );
    });

    test('1,000 distinct events, each sent to both processes at once: each handled exactly once', async () => {
      const events = Array.from({ length: 1_000 }, () => createTestEvent('user.created'));
      const started = performance.now();
      const results = await Promise.all(
        events.flatMap((event) => {
          const body = JSON.stringify(event);
          return [post(receivers[0]!.url, body, 0), post(receivers[1]!.url, body, 1)];
        }),
      );
      const tookMs = Math.round(performance.now() - started);

      const counts = await counter.hgetall(counterKey);
      const runs = events.map((event) => counts[event.id]);
      expect(runs.filter((run) => run === '1')).toHaveLength(1_000);
      expect(results.filter((r) => r.status === 200 && !r.duplicate)).toHaveLength(1_000);
      expect(results.every((r) => r.status === 200 || r.status === 409)).toBe(true);
      const perReceiver = [0, 1].map(
        (i) => results.filter((r) => r.receiver === i && r.status === 200 && !r.duplicate).length,
      );
      // Both processes did real work, so this is a race between processes, not a queue in one.
      expect(perReceiver.every((handled) => handled > 0)).toBe(true);
      console.log(
        `[${topology.name}] 1,000 events x 2 processes (2,000 requests) in ${tookMs} ms: each handled once (${perReceiver.join(' + ')} per process), ${results.filter((r) => r.duplicate).length} duplicates, ${results.filter((r) => r.status === 409).length} in progress`,
      );
    }, 60_000);
  });
}
