/**
 * RedisStore checked against the store model (checkStore): generated concurrent histories on a real
 * standalone server and a three-master Cluster, each history's calls checked for linearizability. The
 * seed is new on every run (a failure prints it); STORE_CHECK_SEED pins it to replay one.
 */
import { Cluster, Redis } from 'ioredis';
import { RedisStore } from 'service-webhooks/redis';
import { storeModelSuite } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, test } from 'vitest';
import {
  type ClusterRedis,
  type StandaloneRedis,
  startCluster,
  startStandalone,
} from '../../support/redis-servers.js';
import { storeCheckSeed } from '../../support/store-check.js';

let standalone: StandaloneRedis;
let cluster: ClusterRedis;
let redis: Redis;
let clusterClient: Cluster;

beforeAll(async () => {
  [standalone, cluster] = await Promise.all([startStandalone(), startCluster()]);
  redis = new Redis(standalone.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  clusterClient = new Cluster([...cluster.nodes], {
    enableOfflineQueue: false,
    redisOptions: { maxRetriesPerRequest: 1 },
  });
  await Promise.all(
    [redis, clusterClient].map((client) => new Promise((resolve) => client.once('ready', resolve))),
  );
});

afterAll(async () => {
  for (const client of [redis, clusterClient]) client?.disconnect();
  await Promise.all([standalone?.stop(), cluster?.stop()]);
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
  seed: storeCheckSeed(),
});

storeModelSuite({
  name: 'RedisStore (Cluster, 3 masters)',
  createStore: () => new RedisStore({ client: clusterClient, prefix: 'model:' }),
  describe,
  test,
  histories: 200,
  timeLimitMs: 25_000,
  seed: storeCheckSeed(),
});
