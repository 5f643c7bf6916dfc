/**
 * What a worker says about the inbox: the figures (stats, logged every interval), a backlog reported
 * to onError once per crossing and its end logged, and new dead letters logged.
 */
import type { Redis } from 'ioredis';
import { createWebhooks, type WebhookError } from 'service-webhooks';
import { InboxBacklogError, inboxStats, startInboxWorker } from 'service-webhooks/bullmq';
import { RedisStore } from 'service-webhooks/redis';
import { createTestEvent } from 'service-webhooks/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { RedisServer } from '../support/redis-servers.js';
import { waitUntil } from '../support/wait-until.js';
import { deliver, failFastClient, SECRET, startDoor, uniqueName } from './support.js';

let redis: RedisServer;

beforeAll(async () => {
  redis = await RedisServer.start();
});

afterAll(async () => {
  await redis?.destroy();
});

test('figures are logged each interval; a backlog reaches onError once, its end the logger', async () => {
  const queueName = uniqueName('monitor');
  const storePrefix = `${queueName}:store:`;
  const door = await startDoor({ redisUrl: redis.url, queueName, storePrefix });
  const storeClient: Redis = failFastClient(redis.url);
  const logged: { level: string; record: Record<string, unknown>; message: string | undefined }[] = [];
  const logger = Object.fromEntries(
    (['info', 'warn', 'error'] as const).map((level) => [
      level,
      (record: unknown, message?: string) => {
        logged.push({ level, record: record as Record<string, unknown>, message });
      },
    ]),
  ) as Record<'info' | 'warn' | 'error', (record: unknown, message?: string) => void>;
  const webhooks = createWebhooks({
    secret: SECRET,
    store: new RedisStore({ client: storeClient, prefix: storePrefix }),
    logger,
  });
  const errors: WebhookError[] = [];
  webhooks.onError((error) => {
    errors.push(error);
  });
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  webhooks.on('user.created', async (event) => {
    if (event.data.email === 'poison@example.com') throw new Error('poison');
    await gate;
  });
  const worker = startInboxWorker(webhooks, {
    logger,
    connection: redis.url,
    queueName,
    concurrency: 2,
    attempts: 1,
    monitor: { intervalMs: 150, maxDepth: 5 },
  });
  try {
    await worker.waitUntilReady();
    const events = Array.from({ length: 12 }, () => createTestEvent('user.created'));
    for (const event of events) expect((await deliver(door.url, event)).status).toBe(200);
    const stats = await inboxStats(door.inbox.queue);
    expect(stats).toMatchObject({ active: 2, waiting: 10, delayed: 0, depth: 12, deadLettered: 0 });
    expect(stats.oldestWaitingMs).toBeGreaterThanOrEqual(0);
    expect(stats.oldestWaitingMs).toBeLessThan(10_000);

    await waitUntil(
      'the backlog to be reported',
      () => errors.some((e) => e instanceof InboxBacklogError),
      5_000,
    );
    // Sampled again meanwhile, the backlog is reported once.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const backlog = errors.filter((error) => error instanceof InboxBacklogError) as InboxBacklogError[];
    expect(backlog).toHaveLength(1);
    expect(backlog[0]!.code).toBe('inbox_backlog');
    expect(backlog[0]!.depth).toBeGreaterThan(5);
    expect(backlog[0]!.message).toContain('more than 5 events queued');
    const figures = logged.filter(({ message }) => message === 'webhook inbox');
    expect(figures.length).toBeGreaterThanOrEqual(2);
    // A tick may come while the twelve are still being delivered (a busy machine sends them slower
    // than one interval), so it may read fewer; every tick after the last one reads all twelve, and
    // the backlog wait and the half second above hold several such ticks.
    for (const figure of figures)
      expect(figure).toMatchObject({ level: 'info', record: { inbox: queueName } });
    expect(figures.map(({ record }) => record.depth)).toContain(12);
    expect(figures.at(-1)).toMatchObject({ record: { depth: 12 } });

    release();
    await waitUntil(
      'the inbox to catch up',
      () => logged.some(({ message }) => message === 'webhook inbox: caught up'),
      5_000,
    );

    const poison = createTestEvent('user.created', { data: { email: 'poison@example.com' } });
    expect((await deliver(door.url, poison)).status).toBe(200);
    await waitUntil(
      'the new dead letter to be logged',
      () => logged.some(({ message }) => message?.startsWith('webhook inbox: events were dead-lettered')),
      5_000,
    );
    expect((await worker.stats()).deadLettered).toBe(1);
  } finally {
    release();
    await worker.close();
    await door.close();
    storeClient.disconnect();
  }
});
