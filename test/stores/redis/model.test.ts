/**
 * RedisStore checked against the store model (checkStore): generated concurrent histories on a real
 * standalone server and a three-master Cluster, each history's calls checked for linearizability. The
 * seed is new on every run (a failure prints it); STORE_CHECK_SEED pins it to replay one.
 */
import type { Cluster, Redis } from 'ioredis';
import { RedisStore } from 'service-webhooks/redis';
import { storeModelSuite } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, test } from 'vitest';
import { storeCheckSeed } from '../../support/store-check.js';
import { type RedisTopologies, startRedisTopologies } from './support.js';

let redis: Redis;
let clusterClient: Cluster;
let topologies: RedisTopologies | undefined;

beforeAll(async () => {
  topologies = await startRedisTopologies();
  ({ redis, clusterClient } = topologies);
});

afterAll(async () => {
  await topologies?.stop();
});

// No fault injection: RedisStore talks to ioredis directly, with no seam for the hook (faults.test.ts
// and cluster-faults.test.ts stop, pause and kill real servers instead).
storeModelSuite({
  name: 'RedisStore (standalone)',
  createStore: () => new RedisStore({ client: redis, prefix: 'model:' }),
  describe,
  test,
  histories: 200,
  timeLimitMs: 25_000,
  ordering: true,
  seed: storeCheckSeed(),
});

storeModelSuite({
  name: 'RedisStore (Cluster, 3 masters)',
  createStore: () => new RedisStore({ client: clusterClient, prefix: 'model:' }),
  describe,
  test,
  histories: 200,
  timeLimitMs: 25_000,
  ordering: true,
  seed: storeCheckSeed(),
});
