/**
 * The exactly-once guarantees on a real Redis (a redis-server this test starts): two applications for
 * two registrations on one Redis with the default prefix, and a handler that outlives its lease while
 * retries arrive. Each application has its own client and store, as two deployments would.
 */
import { Redis } from 'ioredis';
import { createWebhooks, type WebhookError } from 'service-webhooks';
import { RedisStore } from 'service-webhooks/redis';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type StandaloneRedis, startStandalone } from '../../support/redis-servers.js';
import { sleep } from '../../support/sleep.js';

let server: StandaloneRedis;
const clients: Redis[] = [];

/** A client as the docs recommend it: fail fast while Redis is unreachable. */
async function client(): Promise<Redis> {
  const redis = new Redis(server.url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 1_000,
  });
  clients.push(redis);
  await new Promise((resolve) => redis.once('ready', resolve));
  return redis;
}

beforeAll(async () => {
  server = await startStandalone();
});

afterAll(async () => {
  for (const redis of clients) redis.disconnect();
  await server?.stop();
});

describe('exactly once on Redis', () => {
  test('two apps for two registrations on one Redis, default prefix, no option: each runs every event once', async () => {
    const runs = new Map<string, number>();
    const app = async (name: string, secret: string) => {
      const webhooks = createWebhooks({ secret, store: new RedisStore({ client: await client() }) });
      webhooks.onAny((event) => {
        runs.set(`${name} ${event.id}`, (runs.get(`${name} ${event.id}`) ?? 0) + 1);
      });
      return webhooks;
    };
    const [a, b] = await Promise.all([app('a', 'whsec_app_a'), app('b', 'whsec_app_b')]);
    const events = Array.from({ length: 20 }, () => createTestEvent('project.created'));
    // Every event to both registrations, three copies each at once (a retry racing the first attempt).
    const responses = await Promise.all(
      events.flatMap((event) => [
        ...Array.from({ length: 3 }, () => deliver(a, event, { secret: 'whsec_app_a' })),
        ...Array.from({ length: 3 }, () => deliver(b, event, { secret: 'whsec_app_b' })),
      ]),
    );
    expect(responses.every((response) => response.status === 200 || response.status === 409)).toBe(true);
    for (const event of events) {
      expect([runs.get(`a ${event.id}`), runs.get(`b ${event.id}`)]).toEqual([1, 1]);
    }
  });

  test('a handler running 3× the lease runs once while 20 retries arrive from two processes', async () => {
    const errors: WebhookError[] = [];
    let runs = 0;
    // Two processes of one application: one secret, one Redis, each its own client.
    const replica = async () =>
      createWebhooks({
        secret: 'whsec_slow',
        store: new RedisStore({ client: await client() }),
        leaseSeconds: 1,
        handlerTimeoutMs: 200,
      })
        .onError((error) => {
          errors.push(error);
        })
        .on('payment.refunded', async () => {
          runs++;
          await sleep(3_000); // ignores ctx.signal
        });
    const [one, two] = await Promise.all([replica(), replica()]);
    const event = createTestEvent('payment.refunded');
    const first = deliver(one, event, { secret: 'whsec_slow' });
    const retries = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        sleep(100 + i * 140).then(() => deliver(i % 2 ? one : two, event, { secret: 'whsec_slow' })),
      ),
    );
    expect((await first).status).toBe(503);
    expect(retries.map((response) => response.status).join()).toBe(Array(20).fill(409).join());
    await sleep(400);
    expect((await deliver(two, event, { secret: 'whsec_slow' })).headers['x-webhook-duplicate']).toBe('true');
    expect(runs).toBe(1);
    expect(errors.map((error) => error.code)).toEqual(['handler_timeout']);
  }, 15_000);
});
