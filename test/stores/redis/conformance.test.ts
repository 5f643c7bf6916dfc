import { type Cluster, Redis } from 'ioredis';
import { ConfigurationError, createWebhooks, StoreUnavailableError } from 'service-webhooks';
import { RedisStore } from 'service-webhooks/redis';
import { createTestEvent, deliver, storeConformanceSuite } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { repoPath } from '../../support/paths.js';
import { type RedisTopologies, startRedisTopologies } from './support.js';

let redis: Redis;
let pipelined: Redis;
let clusterClient: Cluster;
let pipelinedCluster: Cluster;
let topologies: RedisTopologies | undefined;

beforeAll(async () => {
  topologies = await startRedisTopologies();
  ({ redis, clusterClient } = topologies);
  // The README recommends auto-pipelining under concurrent load: the store must behave the same with it.
  [pipelined, pipelinedCluster] = await Promise.all([
    topologies.standaloneClient({ enableAutoPipelining: true }),
    topologies.newClusterClient({ enableAutoPipelining: true }),
  ]);
});

afterAll(async () => {
  await topologies?.stop();
});

storeConformanceSuite({
  name: 'RedisStore (standalone)',
  createStore: () => new RedisStore({ client: redis }),
  describe: describe.concurrent,
  test,
  ordering: true,
});

storeConformanceSuite({
  name: 'RedisStore (Cluster, 3 masters)',
  createStore: () => new RedisStore({ client: clusterClient, prefix: 'conformance:' }),
  describe: describe.concurrent,
  test,
  ordering: true,
});

storeConformanceSuite({
  name: 'RedisStore (standalone, enableAutoPipelining)',
  createStore: () => new RedisStore({ client: pipelined, prefix: 'pipelined:' }),
  describe: describe.concurrent,
  test,
  ordering: true,
});

storeConformanceSuite({
  name: 'RedisStore (Cluster, 3 masters, enableAutoPipelining)',
  createStore: () => new RedisStore({ client: pipelinedCluster, prefix: 'pipelined:' }),
  describe: describe.concurrent,
  test,
  ordering: true,
});

describe('RedisStore keys', () => {
  test('the whole event id is the hash tag, braces escaped, so distinct ids stay distinct keys', () => {
    const store = new RedisStore({ client: redis, prefix: 'p:' });
    expect(store.keyFor('evt_1')).toBe('p:{evt_1}');
    expect(store.keyFor('a:b')).toBe('p:{a:b}');
    expect(store.keyFor('evt_{x}')).toBe('p:{evt_%7Bx%7D}');
    expect(store.keyFor('}')).toBe('p:{%7D}');
    expect(store.keyFor('100%')).toBe('p:{100%25}');
    expect(store.keyFor('é✓🚀')).toBe('p:{é✓🚀}');
    // Lone surrogates would all become U+FFFD in UTF-8 and collide; they are escaped instead.
    expect(store.keyFor('a\uD800')).toBe('p:{a%uD800}');
    expect(store.keyFor('a\uDC00')).not.toBe(store.keyFor('a\uD800'));
  });

  test('ids with braces spread over slots by their whole id, not by a fragment', async () => {
    const store = new RedisStore({ client: redis });
    // With a naive `{id}` tag, both keys would hash on "a" and always land together.
    const [one, two] = await Promise.all(
      ['a}1', 'a}2'].map((id) => clusterClient.cluster('KEYSLOT', store.keyFor(id))),
    );
    const [tagOne, tagTwo] = await Promise.all(
      ['a%7D1', 'a%7D2'].map((tag) => clusterClient.cluster('KEYSLOT', tag)),
    );
    expect([one, two]).toEqual([tagOne, tagTwo]);
  });

  test('a guarded event (ordering) keys on its resource: the event, its lease and its watermark share one Cluster slot', async () => {
    const store = new RedisStore({ client: redis, prefix: 'p:' });
    const resource = 'orders:user:usr_{1}';
    const key = `${resource}\u001f!evt_1`;
    expect(store.keyFor(key)).toBe('p:{orders:user:usr_%7B1%7D}\u001f!evt_1');
    expect(store.resourceKeysFor(resource)).toEqual([
      'p:{orders:user:usr_%7B1%7D}:lease',
      'p:{orders:user:usr_%7B1%7D}:watermark',
    ]);
    const slots = await Promise.all(
      [store.keyFor(key), ...store.resourceKeysFor(resource)].map((one) =>
        clusterClient.cluster('KEYSLOT', one),
      ),
    );
    expect(new Set(slots).size).toBe(1);
    // An unguarded key is unchanged, and never equals a guarded one.
    expect(store.keyFor(resource)).toBe('p:{orders:user:usr_%7B1%7D}');
  });

  test('a guarded delivery on a Cluster: latest runs the newer event, answers the older one stale, in three scripts each', async () => {
    const store = new RedisStore({ client: clusterClient, prefix: `ordering-${crypto.randomUUID()}:` });
    const secret = 'whsec_redis_ordering';
    const ran: string[] = [];
    const webhooks = createWebhooks({ secret, store, ordering: { 'user.*': 'latest' } }).on(
      'user.updated',
      (event) => {
        ran.push(event.id);
      },
    );
    const created = Math.floor(Date.now() / 1000);
    const data = { object: 'user', id: `usr_${crypto.randomUUID()}` } as never;
    const newer = createTestEvent('user.updated', { created, data });
    const older = createTestEvent('user.updated', { created: created - 30, data });
    expect((await deliver(webhooks, newer, { secret })).status).toBe(200);
    const stale = await deliver(webhooks, older, { secret });
    expect(stale.headers['x-webhook-stale']).toBe('true');
    expect(ran).toEqual([newer.id]);
  });

  test('a claim leaves a key with the lease as its TTL; a completion keeps the TTL given', async () => {
    const store = new RedisStore({ client: redis });
    const id = `ttl-${crypto.randomUUID()}`;
    const token = crypto.randomUUID();
    await store.claim(id, token, 5_000);
    const leaseTtl = await redis.pttl(store.keyFor(id));
    expect(leaseTtl).toBeGreaterThan(4_000);
    expect(leaseTtl).toBeLessThanOrEqual(5_000);
    expect(await store.complete(id, token, 86_400_000)).toBe('completed');
    expect(await redis.pttl(store.keyFor(id))).toBeGreaterThan(86_000_000);
    // The completed marker is not a stored token, so no delivery attempt can own it.
    expect(await redis.get(store.keyFor(id))).toBe('c');
    expect(await store.complete(id, 'c', 1_000)).toBe('lost');
    expect(await store.release(id, 'c')).toBeUndefined();
    expect(await store.claim(id, crypto.randomUUID(), 1_000)).toBe('completed');
    await redis.del(store.keyFor(id));
  });

  test('a renewal sets the PTTL to the new lease, keeps the token, and leaves a completion alone', async () => {
    const store = new RedisStore({ client: redis });
    const id = `renew-${crypto.randomUUID()}`;
    const token = crypto.randomUUID();
    const key = store.keyFor(id);
    await store.claim(id, token, 1_000);
    expect(await store.renew(id, token, 60_000)).toBe('renewed');
    const renewed = await redis.pttl(key);
    expect(renewed).toBeGreaterThan(59_000);
    expect(renewed).toBeLessThanOrEqual(60_000);
    // A renewal counts from now, so it may shorten the lease as well.
    expect(await store.renew(id, token, 5_000)).toBe('renewed');
    expect(await redis.pttl(key)).toBeLessThanOrEqual(5_000);
    expect(await redis.get(key)).toBe(`t:${token}`);
    // A stranger's renewal changes neither the holder nor the lease.
    expect(await store.renew(id, crypto.randomUUID(), 60_000)).toBe('lost');
    expect(await redis.pttl(key)).toBeLessThanOrEqual(5_000);
    expect(await redis.get(key)).toBe(`t:${token}`);
    expect(await store.complete(id, token, 86_400_000)).toBe('completed');
    expect(await store.renew(id, token, 1_000)).toBe('lost');
    expect(await redis.get(key)).toBe('c');
    expect(await redis.pttl(key)).toBeGreaterThan(86_000_000);
    await redis.del(key);
    // An absent key (a lease Redis already dropped) is taken back with the token and the new lease.
    expect(await store.renew(id, token, 30_000)).toBe('renewed');
    expect(await redis.get(key)).toBe(`t:${token}`);
    expect(await redis.pttl(key)).toBeGreaterThan(29_000);
    await redis.del(key);
  });

  test('recovers when Redis forgets its scripts (EVALSHA falls back to EVAL)', async () => {
    const store = new RedisStore({ client: redis });
    const id = `noscript-${crypto.randomUUID()}`;
    await store.claim(id, crypto.randomUUID(), 1_000);
    await redis.script('FLUSH');
    expect(await store.claim(id, crypto.randomUUID(), 1_000)).toBe('in_progress');
  });
});

describe('RedisStore configuration', () => {
  test('refuses something that is not an ioredis client, saying what to pass', () => {
    expect(() => new RedisStore({ client: {} as Redis })).toThrow(ConfigurationError);
    expect(() => new RedisStore(undefined as unknown as { client: Redis })).toThrow(/new Redis\(/);
  });

  test('refuses a prefix with braces, which would replace the event id as hash tag', () => {
    expect(() => new RedisStore({ client: redis, prefix: '{webhooks}:' })).toThrow(ConfigurationError);
  });

  test('adds no error listener to the application client', () => {
    const before = redis.listenerCount('error');
    new RedisStore({ client: redis });
    expect(redis.listenerCount('error')).toBe(before);
  });

  test('reports a failed command as StoreUnavailableError with the ioredis error as cause', async () => {
    // Nothing listens on port 1: the store connects the lazy client on first use (as ioredis would on a
    // first command), the connection is refused, and the failure must come back typed.
    const offline = new Redis({
      port: 1,
      lazyConnect: true,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    const store = new RedisStore({ client: offline });
    const failure = await store.claim('evt_offline', 'token', 1_000).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect((failure as StoreUnavailableError).cause).toBeInstanceOf(Error);
    offline.disconnect();
  });
});

describe('RedisStore packaging', () => {
  test('imports ioredis for types only, so loading service-webhooks/redis never requires ioredis', async () => {
    const { readFile } = await import('node:fs/promises');
    const source = await readFile(repoPath('src', 'stores', 'redis-store.ts'), 'utf8');
    const ioredisImports = source.match(/^import .* from 'ioredis';$/gm) ?? [];
    expect(ioredisImports.length).toBeGreaterThan(0);
    for (const line of ioredisImports) expect(line).toMatch(/^import type /);
    expect(source).not.toMatch(/require\(['"]ioredis|import\(['"]ioredis/);
  });
});
