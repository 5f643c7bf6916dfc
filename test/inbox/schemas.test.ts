/**
 * Issues 34 and 45 across the queue, on real Redis and real BullMQ: the door acknowledges a signed event
 * whatever its schema would say (the sender is done with it), and the worker, whose receiver has the
 * schema, dead-letters an event that fails it at its first attempt, with the schema's reason, running
 * no handler and spending no retry; a replay once the schema is fixed handles it. Issue 45: whatever a
 * schema throws, the dead letter says it readably; a schema that never settles is an ordinary failed
 * attempt, past its deadline, and the retry handles the event.
 */
import type { Redis } from 'ioredis';
import {
  createWebhooks,
  EventSchemaError,
  SchemaTimeoutError,
  type StandardSchemaV1,
  type WebhookError,
} from 'service-webhooks';
import { inboxAdmin, startInboxWorker } from 'service-webhooks/bullmq';
import { RedisStore } from 'service-webhooks/redis';
import { createTestEvent } from 'service-webhooks/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { z } from 'zod';
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

const amountInCents = z
  .object({ data: z.object({ object: z.literal('payment'), id: z.string(), amount: z.number().int() }) })
  .loose();

function worker(
  queueName: string,
  storePrefix: string,
  schemas: { 'payment.succeeded': StandardSchemaV1<unknown, { data: { amount: unknown } }> } | undefined,
  storeTimeoutMs?: number,
) {
  const client: Redis = failFastClient(redis.url);
  const errors: WebhookError[] = [];
  const handled: unknown[] = [];
  const webhooks = createWebhooks({
    secret: SECRET,
    store: new RedisStore({ client, prefix: storePrefix }),
    ...(schemas ? { schemas } : {}),
    ...(storeTimeoutMs ? { storeTimeoutMs } : {}),
  });
  webhooks.onError((error) => {
    errors.push(error);
  });
  const attempts: number[] = [];
  webhooks.on('payment.succeeded', (event, { attempt }) => {
    handled.push(event.data.amount);
    attempts.push(attempt);
  });
  const running = startInboxWorker(webhooks, {
    connection: redis.url,
    queueName,
    monitor: false,
    attempts: 5,
    backoff: [100],
  });
  return {
    errors,
    handled,
    attempts,
    running,
    close: async (force = false) => {
      await running.close(force);
      client.disconnect();
    },
  };
}

test('an event that fails its schema is dead-lettered at its first attempt, and a replay after the fix handles it', async () => {
  const queueName = uniqueName('schemas');
  const storePrefix = `${queueName}:store:`;
  const door = await startDoor({ redisUrl: redis.url, queueName, storePrefix });
  const admin = inboxAdmin({ connection: redis.url, queueName });
  const strict = worker(queueName, storePrefix, { 'payment.succeeded': amountInCents });
  try {
    await strict.running.waitUntilReady();
    const event = createTestEvent('payment.succeeded', { data: { amount: '12.00' } as never });
    // The door has no schema: the sender is answered 200 once the event is queued.
    expect((await deliver(door.url, event)).status).toBe(200);
    await waitUntil('the dead letter', async () => (await admin.list()).items.length === 1, 10_000);
    const [dead] = (await admin.list()).items;
    expect(dead).toMatchObject({ eventId: event.id, eventType: 'payment.succeeded', attempts: 1 });
    expect(dead!.lastError).toMatch(/^event_schema_mismatch: .*data\.amount/);
    expect(strict.handled).toEqual([]);
    const reported = strict.errors.find((error) => error instanceof EventSchemaError) as EventSchemaError;
    expect(reported.issues.map((issue) => issue.path)).toEqual([['data', 'amount']]);
  } finally {
    await strict.close();
  }

  // The schema is fixed (here: the account sends amounts as strings, and the handler accepts that).
  const fixed = worker(queueName, storePrefix, undefined);
  try {
    await fixed.running.waitUntilReady();
    const [dead] = (await admin.list()).items;
    await admin.replay(dead!.jobId);
    await waitUntil('the replay to be handled', () => fixed.handled.length === 1, 10_000);
    expect(fixed.handled).toEqual(['12.00']);
    expect((await admin.list()).items).toHaveLength(0);
  } finally {
    await fixed.close();
    await admin.close();
    await door.close();
  }
});

test('a schema that never settles fails its attempt past storeTimeoutMs, and the retry handles the event', async () => {
  // Before the deadline, the worker waited on the schema forever: the job neither ended nor failed.
  const queueName = uniqueName('schemas-hung');
  const storePrefix = `${queueName}:store:`;
  const door = await startDoor({ redisUrl: redis.url, queueName, storePrefix });
  const admin = inboxAdmin({ connection: redis.url, queueName });
  let calls = 0;
  const hangsOnce: StandardSchemaV1<unknown, { data: { amount: unknown } }> = {
    '~standard': {
      version: 1,
      vendor: 'test',
      // The first attempt's schema hangs (a lookup to a stalled service); the second one answers.
      validate: (value) =>
        ++calls === 1
          ? new Promise(() => {})
          : Promise.resolve({ value: value as { data: { amount: unknown } } }),
    },
  };
  const hung = worker(queueName, storePrefix, { 'payment.succeeded': hangsOnce }, 200);
  try {
    await hung.running.waitUntilReady();
    const event = createTestEvent('payment.succeeded');
    expect((await deliver(door.url, event)).status).toBe(200);
    await waitUntil('the retry to be handled', () => hung.handled.length === 1, 10_000);
    expect(hung.attempts).toEqual([2]);
    expect(calls).toBe(2);
    const timeouts = hung.errors.filter((error) => error instanceof SchemaTimeoutError);
    expect(timeouts).toHaveLength(1);
    expect(timeouts[0]).toMatchObject({ code: 'schema_timeout', eventId: event.id });
    expect(hung.errors.some((error) => error instanceof EventSchemaError)).toBe(false);
    expect((await admin.list()).items).toHaveLength(0);
  } finally {
    // Forced: before the deadline, the hung attempt never ended, and a graceful close waits for it.
    await hung.close(true);
    await admin.close();
    await door.close();
  }
});

test('a schema that throws a null-prototype object is dead-lettered at its first attempt, with a message that can be read', async () => {
  // Before, describing the failure for the dead letter called String() on the thrown value, which
  // threw in turn: the poison event was retried as if it were an ordinary failure.
  const queueName = uniqueName('schemas-odd-throw');
  const storePrefix = `${queueName}:store:`;
  const door = await startDoor({ redisUrl: redis.url, queueName, storePrefix });
  const admin = inboxAdmin({ connection: redis.url, queueName });
  const throwsOddly: StandardSchemaV1<unknown, { data: { amount: unknown } }> = {
    '~standard': {
      version: 1,
      vendor: 'test',
      validate: () => {
        throw Object.create(null);
      },
    },
  };
  const odd = worker(queueName, storePrefix, { 'payment.succeeded': throwsOddly });
  try {
    await odd.running.waitUntilReady();
    const event = createTestEvent('payment.succeeded');
    expect((await deliver(door.url, event)).status).toBe(200);
    await waitUntil('the dead letter', async () => (await admin.list()).items.length === 1, 10_000);
    const [dead] = (await admin.list()).items;
    expect(dead).toMatchObject({ eventId: event.id, attempts: 1 });
    expect(dead!.lastError).toMatch(/^event_schema_mismatch: .*the schema threw/);
    expect(odd.handled).toEqual([]);
  } finally {
    await odd.close();
    await admin.close();
    await door.close();
  }
});
