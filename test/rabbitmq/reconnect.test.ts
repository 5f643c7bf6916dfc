/**
 * The RabbitMQ inbox when its connections go, on the broker of this machine: the door refuses what the
 * broker did not confirm (no queue to route to: a `basic.return`; no broker) with 503
 * `inbox_unavailable`, and writes again once a new connection is open; a worker whose connection is
 * cut mid-run (a proxy between it and the broker ends the socket, as a broker restart or a network cut
 * would) opens a new one by itself and every event is handled exactly once, none lost, none
 * dead-lettered.
 */
import type { ChannelModel } from 'amqplib';
import { createWebhooks, MemoryStore } from 'service-webhooks';
import {
  RabbitMQPublishError,
  rabbitMQInbox,
  rabbitMQInboxAdmin,
  startRabbitMQWorker,
} from 'service-webhooks/rabbitmq';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { waitUntil } from '../support/wait-until.js';
import { AMQP_URL, deleteQueues, openConnection, startProxy, uniqueQueue } from './support.js';

const SECRET = 'whsec_rabbitmq_reconnect';
let connection: ChannelModel;
const queues: string[] = [];

beforeAll(async () => {
  connection = await openConnection();
});

afterAll(async () => {
  for (const queue of queues) await deleteQueues(connection, queue).catch(() => {});
  await connection?.close();
});

test('the door: 503 when the broker returns the message or cannot be reached, 200 again on a new connection', async () => {
  const queue = uniqueQueue('door');
  queues.push(queue);
  const proxy = await startProxy();
  const inbox = rabbitMQInbox({ url: proxy.url, queue, confirmTimeoutMs: 2_000 });
  const errors: unknown[] = [];
  const door = createWebhooks({ secret: SECRET, store: new MemoryStore(), inbox });
  door.onError((error) => errors.push(error));
  try {
    expect((await deliver(door, createTestEvent('user.created'), { secret: SECRET })).status).toBe(200);

    // The queue deleted under the door's open connection: the mandatory publish comes back.
    await deleteQueues(connection, queue);
    const returned = await deliver(door, createTestEvent('user.created'), { secret: SECRET });
    expect(returned.status).toBe(503);
    expect(returned.body).toContain('inbox_unavailable');
    const cause = (errors.at(-1) as { cause?: unknown } | undefined)?.cause;
    expect(cause).toBeInstanceOf(RabbitMQPublishError);
    expect((cause as RabbitMQPublishError).code).toBe('returned');

    // The door's connection is cut: the next event opens a new one, which declares the queues
    // again, and is queued.
    expect(proxy.cut()).toBe(1);
    await waitUntil('the door to see its connection closed', async () => {
      const answer = await deliver(door, createTestEvent('user.created'), { secret: SECRET });
      return answer.status === 200;
    });
    const admin = rabbitMQInboxAdmin({ url: AMQP_URL, queue });
    expect((await admin.stats()).waiting).toBeGreaterThanOrEqual(1);
    await admin.close();
  } finally {
    await inbox.close();
    await proxy.close();
  }

  const nowhere = rabbitMQInbox({ url: 'amqp://guest:guest@127.0.0.1:9', queue, confirmTimeoutMs: 1_000 });
  const refusing = createWebhooks({ secret: SECRET, store: new MemoryStore(), inbox: nowhere });
  refusing.onError(() => {});
  const answer = await deliver(refusing, createTestEvent('user.created'), { secret: SECRET });
  expect(answer.status).toBe(503);
  expect(answer.body).toContain('inbox_unavailable');
  await nowhere.close();
});

// 60 events, each handler 200 ms, 8 at once: the connection is closed twice while about 8 run and 8
// more wait in the prefetch, which is what a cut can lose or double; more events would prove nothing more.
test('a worker whose connection is cut mid-run reconnects: every event handled once, none dead-lettered', async () => {
  const queue = uniqueQueue('worker');
  queues.push(queue);
  const proxy = await startProxy();
  const inbox = rabbitMQInbox({ url: AMQP_URL, queue });
  const admin = rabbitMQInboxAdmin({ url: AMQP_URL, queue });
  const door = createWebhooks({ secret: SECRET, store: new MemoryStore(), inbox });
  const store = new MemoryStore();
  const webhooks = createWebhooks({ secret: SECRET, store, leaseSeconds: 3, handlerTimeoutMs: 2_000 });
  webhooks.onError(() => {});
  const completed = new Map<string, number>();
  webhooks.on('user.created', async (event) => {
    await new Promise((resolve) => setTimeout(resolve, 200));
    completed.set(event.id, (completed.get(event.id) ?? 0) + 1);
  });
  const lines: string[] = [];
  const log = (_record: unknown, message?: string) => {
    if (message) lines.push(message);
  };
  const worker = startRabbitMQWorker(webhooks, {
    url: proxy.url,
    queue,
    concurrency: 8,
    reconnectDelayMs: 100,
    monitor: false,
    logger: { info: log, warn: log, error: log },
  });
  try {
    await worker.waitUntilReady();
    const events = Array.from({ length: 60 }, () => createTestEvent('user.created'));
    for (const event of events) {
      expect((await deliver(door, event, { secret: SECRET })).status).toBe(200);
    }
    for (let cut = 1; cut <= 2; cut++) {
      const before = completed.size;
      await waitUntil('some events to run', () => completed.size >= before + 5);
      expect(proxy.cut()).toBe(1);
      await waitUntil(
        'the worker to reconnect',
        () => lines.filter((line) => line.includes('reconnected')).length >= cut,
      );
    }
    await waitUntil(
      'every event handled and the inbox drained',
      async () =>
        completed.size === events.length && (await admin.stats()).depth === 0 && worker.running === 0,
      60_000,
    );
    const twice = [...completed].filter(([, count]) => count !== 1);
    expect(twice).toEqual([]);
    expect((await admin.stats()).deadLettered).toBe(0);
    expect(lines.filter((line) => line.includes('lost the connection')).length).toBeGreaterThanOrEqual(2);
  } finally {
    await worker.close();
    await Promise.all([inbox.close(), admin.close()]);
    await proxy.close();
  }
});
