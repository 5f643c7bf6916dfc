/**
 * Issue 45, item 3, on the real PostgreSQL and pg-boss: whoever may write to pg-boss's job table (an
 * SQL GRANT, often broader than holding the webhook secret) cannot make a handler act on an event the
 * service never sent. A job sent by hand, a door's job whose data was UPDATEd (its amount, its
 * attempt, a trace context), are each dead-lettered on their first attempt as
 * `unauthenticated_inbox_entry`, reported, with no handler run; the door's own jobs run, and retried
 * ones carry an attempt the worker sealed.
 */
import {
  createWebhooks,
  EventDeadLetteredError,
  MemoryStore,
  type WebhookError,
  type Webhooks,
} from 'service-webhooks';
import { pgBossInbox, pgBossInboxAdmin, startPgBossWorker } from 'service-webhooks/pg-boss';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { waitUntil } from '../support/wait-until.js';
import { BOSS_VERSIONS, dropSchema, type TestBoss, uniqueQueue, uniqueSchema } from './support.js';

const SECRET = 'whsec_pgboss_sealed';

const payment = (amount: number) => {
  const event = createTestEvent('payment.succeeded');
  return { ...event, data: { ...event.data, amount } };
};

describe.each(BOSS_VERSIONS)('$name', (version) => {
  const schema = uniqueSchema();
  let boss: TestBoss;
  const cleanups: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    boss = await version.start(schema);
  });

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  afterAll(async () => {
    await boss?.stop({ graceful: false, wait: true });
    await dropSchema(schema);
  });

  function setup() {
    const queue = uniqueQueue('sealed');
    const inbox = pgBossInbox({ boss, queue });
    const door = createWebhooks({ secret: SECRET, store: new MemoryStore(), inbox });
    const runs: { id: string; amount: unknown; attempt: number }[] = [];
    const errors: WebhookError[] = [];
    let failFirst = new Set<string>();
    const webhooks: Webhooks = createWebhooks({ secret: SECRET, store: new MemoryStore() })
      .onAny((event, context) => {
        runs.push({
          id: event.id,
          amount: (event.data as { amount?: unknown }).amount,
          attempt: context.attempt,
        });
        if (failFirst.has(event.id)) {
          failFirst.delete(event.id);
          throw new Error('downstream down for a moment');
        }
      })
      .onError((error) => {
        errors.push(error);
      });
    const admin = pgBossInboxAdmin({ boss, queue, schema });
    const start = async () => {
      const worker = await startPgBossWorker(webhooks, {
        boss,
        queue,
        schema,
        attempts: 3,
        backoff: [200],
        pollIntervalMs: 50,
        expireInSeconds: 60,
        monitor: false,
      });
      cleanups.push(() => worker.close());
      return worker;
    };
    /** Change the data of the door's job of `event` in place, as an SQL client with a GRANT could. */
    const update = async (event: { readonly id: string }, path: string[], value: unknown) => {
      const { rowCount } = (await boss
        .getDb()
        .executeSql(
          `UPDATE ${schema}.job SET data = jsonb_set(data, $3::text[], $4::jsonb) WHERE name = $1 AND data->'event'->>'id' = $2`,
          [queue, event.id, `{${path.join(',')}}`, JSON.stringify(value)],
        )) as { rowCount?: number };
      expect(rowCount).toBe(1);
    };
    /** `count` dead letters, each of an unauthenticated entry, reported; `attempts` as the job said. */
    const expectRefused = async (count: number, attempts: number[] = Array(count).fill(1)) => {
      const deadLettered = () => errors.filter((error) => error instanceof EventDeadLetteredError);
      await waitUntil(
        'the forged jobs to be dead-lettered and reported',
        async () => (await admin.list()).total === count && deadLettered().length === count,
      );
      const { items } = await admin.list();
      expect(items.map((item) => item.attempts).sort((a, b) => a - b)).toEqual(attempts);
      for (const item of items) expect(item.lastError).toMatch(/^unauthenticated_inbox_entry: /);
      expect(errors.filter((error) => error.code === 'unauthenticated_inbox_entry')).toHaveLength(count);
    };
    return {
      queue,
      door,
      runs,
      errors,
      start,
      update,
      expectRefused,
      failOnce: (ids: string[]) => {
        failFirst = new Set(ids);
      },
    };
  }

  test('a job sent by hand (payment.succeeded, 999999999) runs no handler: dead-lettered at once, reported', async () => {
    const { queue, door, runs, start, expectRefused } = setup();
    // The door first, so that pg-boss's queues exist; then a job written past it.
    const genuine = payment(5);
    expect((await deliver(door, genuine, { secret: SECRET })).status).toBe(200);
    const forged = payment(999999999);
    await boss.send(queue, { event: forged, receivedAt: Date.now(), secretIndex: 0, attempt: 1 }, {});
    await start();
    await expectRefused(1);
    await waitUntil('the genuine payment to run', () => runs.some((run) => run.id === genuine.id));
    expect(runs.map((run) => run.amount)).toEqual([5]);
  });

  test("the door's job UPDATEd in place (amount, attempt 999, a trace context) runs no handler; the door's own runs", async () => {
    const { door, runs, start, update, expectRefused } = setup();
    const [edited, reattempted, retraced, genuine] = [payment(1), payment(2), payment(3), payment(4)];
    for (const event of [edited, reattempted, retraced, genuine])
      expect((await deliver(door, event, { secret: SECRET })).status).toBe(200);
    await update(edited, ['event', 'data', 'amount'], 999999999);
    await update(reattempted, ['attempt'], 999);
    await update(retraced, ['traceparent'], '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00');
    await start();
    // Dead-lettered at their first run; the record keeps the attempt the job claimed (999).
    await expectRefused(3, [1, 1, 999]);
    await waitUntil('the genuine payment to run', () => runs.some((run) => run.id === genuine.id));
    expect(runs).toEqual([{ id: genuine.id, amount: 4, attempt: 1 }]);
  });

  test("PostgreSQL's jsonb gives back what the door sealed: keys in its own order, numbers and text in its own spelling", async () => {
    const { door, runs, start, errors } = setup();
    const event = createTestEvent('payment.succeeded');
    // jsonb sorts keys by length, writes 1e21 as 1000000000000000000000 and 1e-7 as 0.0000001, and
    // keeps escapes as the characters they stand for: none of it may break the seal.
    const awkward = {
      ...event,
      data: {
        zzzzzzzzzz: 1,
        a: [1e21, 1e-7, 2 ** 60 + 1, -0, 0.1, 5e-324],
        'é😀\u0001': { '': null, b: [true, false, { y: 'é', x: '\n\t"' }] },
      },
    };
    expect((await deliver(door, awkward, { secret: SECRET })).status).toBe(200);
    await start();
    await waitUntil('the event to run', () => runs.length === 1);
    expect(errors).toEqual([]);
  });

  test('a retry carries the attempt the worker sealed: ctx.attempt 2, as the schedule says', async () => {
    const { door, runs, start, failOnce, errors } = setup();
    const event = payment(7);
    failOnce([event.id]);
    expect((await deliver(door, event, { secret: SECRET })).status).toBe(200);
    await start();
    await waitUntil('the second attempt', () => runs.length === 2);
    expect(runs.map((run) => run.attempt)).toEqual([1, 2]);
    expect(errors.filter((error) => error.code === 'unauthenticated_inbox_entry')).toEqual([]);
  });
});
