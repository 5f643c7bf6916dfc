/**
 * RedisStore on a Redis Cluster that loses a master (no replicas): every answer stays inside the
 * contract (200 with the handler run once, or 503 store_unavailable within storeTimeoutMs with no
 * handler run), and the app recovers by itself when the node comes back. Prints what it measured.
 * Runs on a cluster of its own, never REDIS_CLUSTER_NODES: it kills a node.
 */
import { Cluster } from 'ioredis';
import { createWebhooks, DEFAULTS, type WebhookResponse } from 'service-webhooks';
import { RedisStore } from 'service-webhooks/redis';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { type ClusterRedis, type RedisServer, startCluster } from '../../support/redis-servers.js';
import { sleep } from '../../support/sleep.js';

const SECRET = 'whsec_cluster_faults';
const STORE_TIMEOUT_MS = DEFAULTS.storeTimeoutMs;
const MARGIN_MS = 500;

let cluster: ClusterRedis;
let client: Cluster;

beforeAll(async () => {
  cluster = await startCluster(3, { own: true });
  client = new Cluster([...cluster.nodes], {
    enableOfflineQueue: false,
    redisOptions: { maxRetriesPerRequest: 1, commandTimeout: 1_000 },
  });
  client.on('error', () => {});
  await new Promise((resolve) => client.once('ready', resolve));
});

afterAll(async () => {
  client?.disconnect();
  await cluster?.stop();
});

test('a master dies and comes back: answers stay in the contract, the app recovers by itself', async () => {
  const runs = new Map<string, number>();
  // A named scope, so the test can compute which node holds an event's key.
  const namespace = 'cluster-faults';
  const webhooks = createWebhooks({
    secret: SECRET,
    namespace,
    store: new RedisStore({ client }),
    storeTimeoutMs: STORE_TIMEOUT_MS,
  });
  webhooks.onAny((event) => {
    runs.set(event.id, (runs.get(event.id) ?? 0) + 1);
  });
  webhooks.onError(() => {});
  const store = new RedisStore({ client });
  const victim = cluster.servers![0]!;

  /** An event whose key lives on `server` (or, with `other`, on any other master). */
  async function eventOn(server: RedisServer, other = false) {
    for (;;) {
      const event = createTestEvent('user.updated');
      const slot = Number(await client.cluster('KEYSLOT', store.keyFor(`${namespace}:${event.id}`)));
      const owner = client.slots[slot]?.[0];
      if ((owner === `${server.host}:${server.port}`) !== other) return event;
    }
  }
  async function send(event: { id: string }): Promise<{ response: WebhookResponse; ms: number }> {
    const started = performance.now();
    const response = await deliver(webhooks, event, { secret: SECRET });
    return { response, ms: Math.round(performance.now() - started) };
  }
  /** The contract, whatever the cluster's state: handled once, or refused quickly without running. */
  function inContract(event: { id: string }, result: { response: WebhookResponse; ms: number }) {
    expect([200, 503]).toContain(result.response.status);
    expect(result.ms).toBeLessThan(STORE_TIMEOUT_MS + MARGIN_MS);
    if (result.response.status === 503) expect(runs.get(event.id)).toBeUndefined();
    else expect(runs.get(event.id)).toBe(1);
  }

  const onVictim = await eventOn(victim);
  const elsewhere = await eventOn(victim, true);
  await victim.stop();

  const a = await send(onVictim);
  const b = await send(elsewhere);
  inContract(onVictim, a);
  inContract(elsewhere, b);
  expect(a.response.status).toBe(503);

  // After cluster-node-timeout (2 s here) the survivors mark the cluster down (full coverage required).
  await sleep(2_500);
  const late = await eventOn(victim, true);
  const c = await send(late);
  inContract(late, c);
  const survivorState = /cluster_state:(\w+)/.exec(
    await cluster.servers![1]!.command('CLUSTER', 'INFO'),
  )?.[1];

  await victim.start();
  const restartedAt = performance.now();
  let recovered = await send(onVictim);
  let refusals = 0;
  while (recovered.response.status !== 200) {
    inContract(onVictim, recovered);
    refusals++;
    expect(performance.now() - restartedAt).toBeLessThan(30_000);
    await sleep(100);
    recovered = await send(onVictim);
  }
  inContract(onVictim, recovered);
  const recoveredAfter = Math.round(performance.now() - restartedAt);

  console.log(
    [
      'Cluster, 3 masters, one killed (fail-fast Cluster client):',
      `  event on the dead master, right after the kill: ${a.response.status} in ${a.ms} ms`,
      `  event on a live master, right away: ${b.response.status} in ${b.ms} ms`,
      `  event on a live master, 2.5 s later (a survivor says cluster_state:${survivorState}): ${c.response.status} in ${c.ms} ms`,
      `  node restarted: event on it handled (200) ${recoveredAfter} ms later, after ${refusals} refusals; handler runs ${runs.get(onVictim.id)}`,
    ].join('\n'),
  );
}, 60_000);
