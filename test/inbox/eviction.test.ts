/**
 * The inbox on a Redis that may evict keys (issue 29.4). An outside review ran it on
 * `maxmemory-policy allkeys-lru`: 11 to 40 of 40 events the door had acknowledged never ran, with
 * BullMQ's console warning the only sign. The door now reads the policy before it queues anything and,
 * by default, answers 503 (the sender keeps the event) until the policy is `noeviction`; the worker
 * reports it. A redis-server of our own per case, started with the policy under test.
 */
import { ConfigurationError, createWebhooks, MemoryStore, type WebhookError } from 'service-webhooks';
import { bullmqInbox, startInboxWorker } from 'service-webhooks/bullmq';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { afterEach, expect, test } from 'vitest';
import { RedisServer } from '../support/redis-servers.js';
import { waitUntil } from '../support/wait-until.js';
import { SECRET, uniqueName } from './support.js';

const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function evictingRedis(policy = 'allkeys-lru') {
  const server = await RedisServer.start(['--maxmemory', '64mb', '--maxmemory-policy', policy]);
  cleanups.push(() => server.destroy());
  return server;
}

function door(url: string, evictionPolicy?: 'refuse' | 'report') {
  const inbox = bullmqInbox({
    connection: url,
    queueName: uniqueName('eviction'),
    ...(evictionPolicy ? { evictionPolicy } : {}),
  });
  cleanups.push(() => inbox.close());
  const errors: WebhookError[] = [];
  // The door's store is in memory here, so that what refuses is the queue's Redis alone.
  const webhooks = createWebhooks({ secret: SECRET, store: new MemoryStore(), inbox }).onError((error) => {
    errors.push(error);
  });
  const send = async (event = createTestEvent('payment.succeeded')) => {
    const response = await deliver(webhooks, event, { secret: SECRET });
    return response.status === 200 ? 200 : `${response.status} ${JSON.parse(response.body).error.code}`;
  };
  return { inbox, send, errors };
}

test('the door refuses every event with 503 inbox_unavailable, naming the policy once, until it is noeviction', async () => {
  const server = await evictingRedis('allkeys-lru');
  const { inbox, send, errors } = door(server.url);
  for (let i = 0; i < 3; i++) expect(await send()).toBe('503 inbox_unavailable');
  expect(await inbox.queue.count()).toBe(0);
  const named = errors.filter((error) => error instanceof ConfigurationError);
  expect(named).toHaveLength(1);
  expect(named[0]!.message).toMatch(/bullmqInbox\(\).*maxmemory-policy allkeys-lru.*noeviction/);
  expect(errors.filter((error) => error.code === 'inbox_unavailable')).toHaveLength(3);

  await server.command('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
  expect(await send()).toBe(200);
  expect(await inbox.queue.count()).toBe(1);
});

test("evictionPolicy: 'report' queues regardless, having said so once", async () => {
  const server = await evictingRedis('volatile-lfu');
  const { inbox, send, errors } = door(server.url, 'report');
  for (let i = 0; i < 2; i++) expect(await send()).toBe(200);
  expect(await inbox.queue.count()).toBe(2);
  expect(errors.filter((error) => error instanceof ConfigurationError)).toHaveLength(1);
});

test('a worker on an evicting Redis reports it to onError and its log', async () => {
  const server = await evictingRedis('allkeys-lfu');
  const errors: WebhookError[] = [];
  const logged: string[] = [];
  const log = (_: unknown, message?: string) => {
    logged.push(String(message));
  };
  const webhooks = createWebhooks({ secret: SECRET }).onError((error) => {
    errors.push(error);
  });
  const worker = startInboxWorker(webhooks, {
    connection: server.url,
    queueName: uniqueName('eviction-worker'),
    monitor: false,
    logger: { info: log, warn: log, error: log },
  });
  cleanups.push(() => worker.close());
  await worker.waitUntilReady();
  await waitUntil('the policy to be reported', () => errors.length > 0, 5_000);
  expect(errors[0]).toBeInstanceOf(ConfigurationError);
  expect(errors[0]!.message).toMatch(/startInboxWorker\(\).*allkeys-lfu.*noeviction/);
  expect(logged.some((message) => message.includes('may evict'))).toBe(true);
});

test('bullmqInbox refuses an evictionPolicy it does not know at construction', () => {
  expect(() => bullmqInbox({ connection: 'redis://127.0.0.1:1', evictionPolicy: 'ignore' as never })).toThrow(
    /`evictionPolicy` must be 'refuse' or 'report'/,
  );
});
