/**
 * RedisStore on a Redis that may evict keys (issue 29.4). An outside review ran the inbox on
 * `maxmemory-policy allkeys-lru`: acknowledged events never ran and handled ones ran again, and the
 * library said nothing. The store now reads the policy before its first call (INFO memory, or CONFIG GET
 * where INFO is refused) and, by default, refuses to work on one that could evict its records.
 * Each case runs on a redis-server of its own, started with the policy under test.
 */
import { Redis } from 'ioredis';
import { ConfigurationError, createWebhooks, type WebhookError } from 'service-webhooks';
import { RedisStore } from 'service-webhooks/redis';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { afterEach, describe, expect, test } from 'vitest';
import { RedisServer } from '../../support/redis-servers.js';

const SECRET = 'whsec_eviction';
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serverWith(...args: string[]) {
  const server = await RedisServer.start(args);
  const client = new Redis(server.url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 1_000,
    // ioredis's ready check reads INFO, which some of these servers refuse (as some managed ones do).
    enableReadyCheck: false,
  });
  client.on('error', () => {});
  cleanups.push(() => server.destroy());
  cleanups.push(() => client.disconnect());
  await new Promise((resolve) => client.once('ready', resolve));
  return { server, client };
}

function receiver(client: Redis, evictionPolicy?: 'refuse' | 'report') {
  const errors: WebhookError[] = [];
  let runs = 0;
  const webhooks = createWebhooks({
    secret: SECRET,
    store: new RedisStore({ client, ...(evictionPolicy ? { evictionPolicy } : {}) }),
  })
    .on('user.created', () => {
      runs++;
    })
    .onError((error) => {
      errors.push(error);
    });
  const send = async (event = createTestEvent('user.created')) => {
    const response = await deliver(webhooks, event, { secret: SECRET });
    return {
      status: response.status,
      code: response.status === 200 ? undefined : JSON.parse(response.body).error.code,
    };
  };
  return { send, errors, runs: () => runs };
}

const configurationErrors = (errors: WebhookError[]) =>
  errors.filter((error) => error instanceof ConfigurationError);

describe('an eviction policy that could lose records', () => {
  test.each([
    ['allkeys-lru', ['--maxmemory', '64mb', '--maxmemory-policy', 'allkeys-lru']],
    // Every key the store writes has a TTL, so a volatile-* policy may evict each of them too.
    ['volatile-lru', ['--maxmemory', '64mb', '--maxmemory-policy', 'volatile-lru']],
    [
      'volatile-ttl, read through CONFIG GET where INFO is refused',
      ['--maxmemory', '64mb', '--maxmemory-policy', 'volatile-ttl', '--rename-command', 'INFO', ''],
    ],
  ])(
    '%s: every delivery is refused 503 store_unavailable, the policy named to onError once',
    async (label, args) => {
      const { client } = await serverWith(...args);
      const { send, errors, runs } = receiver(client);
      for (let i = 0; i < 3; i++) expect(await send()).toEqual({ status: 503, code: 'store_unavailable' });
      expect(runs()).toBe(0);
      const [named, ...again] = configurationErrors(errors);
      expect(again).toHaveLength(0);
      expect(named!.code).toBe('invalid_configuration');
      expect(named!.message).toContain(`maxmemory-policy ${label.split(',')[0]}`);
      expect(named!.message).toContain('noeviction');
      // Each refusal is an outage to the sender, reported as one, with the reason as its cause.
      const outages = errors.filter((error) => error.code === 'store_unavailable');
      expect(outages).toHaveLength(3);
      const causes = (error: unknown): unknown[] =>
        error instanceof Error && error.cause ? [error.cause, ...causes(error.cause)] : [];
      expect(causes(outages[0])).toContain(named);
    },
  );

  test('fixed while running: the next delivery after CONFIG SET maxmemory-policy noeviction is handled', async () => {
    const { client } = await serverWith('--maxmemory', '64mb', '--maxmemory-policy', 'allkeys-lfu');
    const { send, runs } = receiver(client);
    expect((await send()).status).toBe(503);
    // The refused delivery's release is still checking in the background; a check that began before
    // the fix would read the old policy (one more 503, then 200). Let it settle first.
    await new Promise((resolve) => setTimeout(resolve, 100));
    await client.config('SET', 'maxmemory-policy', 'noeviction');
    const event = createTestEvent('user.created');
    expect((await send(event)).status).toBe(200);
    expect((await send(event)).status).toBe(200);
    expect(runs()).toBe(1);
  });

  test("evictionPolicy: 'report' goes on, having said so once", async () => {
    const { client } = await serverWith('--maxmemory', '64mb', '--maxmemory-policy', 'allkeys-random');
    const { send, errors, runs } = receiver(client, 'report');
    for (let i = 0; i < 3; i++) expect((await send()).status).toBe(200);
    expect(runs()).toBe(3);
    expect(configurationErrors(errors)).toHaveLength(1);
    expect(configurationErrors(errors)[0]!.message).toMatch(/allkeys-random.*noeviction/);
  });
});

describe('policies that cannot lose records', () => {
  test.each([
    ['noeviction with a maxmemory', ['--maxmemory', '64mb', '--maxmemory-policy', 'noeviction']],
    [
      'allkeys-lru without a maxmemory (Redis never evicts then)',
      ['--maxmemory', '0', '--maxmemory-policy', 'allkeys-lru'],
    ],
    [
      'a server that lets neither INFO nor CONFIG be read',
      [
        '--maxmemory',
        '64mb',
        '--maxmemory-policy',
        'allkeys-lru',
        '--rename-command',
        'INFO',
        '',
        '--rename-command',
        'CONFIG',
        '',
      ],
    ],
  ])('%s: deliveries are handled, nothing reported', async (_, args) => {
    const { client } = await serverWith(...args);
    const { send, errors, runs } = receiver(client);
    const event = createTestEvent('user.created');
    expect((await send(event)).status).toBe(200);
    expect((await send(event)).status).toBe(200);
    expect(runs()).toBe(1);
    expect(errors).toEqual([]);
  });
});

test('why volatile-* is refused too: under memory pressure it evicts the store’s completions, and a handled event runs again', async () => {
  const { client } = await serverWith('--maxmemory', '3mb', '--maxmemory-policy', 'volatile-lru');
  const { send, runs } = receiver(client, 'report');
  const events = Array.from({ length: 200 }, () => createTestEvent('user.created'));
  for (const event of events) expect((await send(event)).status).toBe(200);
  // Other data with TTLs (a cache) fills the memory.
  const filler = 'x'.repeat(10_000);
  for (let i = 0; i < 600; i++) await client.set(`cache:${i}`, filler, 'PX', 600_000);
  for (const event of events) await send(event);
  console.log(
    `volatile-lru, 3 MB: ${runs() - events.length} of ${events.length} handled events ran again after eviction`,
  );
  expect(runs()).toBeGreaterThan(events.length);
});
