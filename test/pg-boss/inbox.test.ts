/**
 * The pg-boss inbox on the real PostgreSQL: the door writes each event once (a second write of one
 * key adds nothing, before and after the first job completed) and answers 503 when PostgreSQL is
 * down; the worker's retries follow its own schedule with `ctx.attempt` 1, 2, 3, the last failure
 * and a poison entry become dead letters with their cause, a deferral spends no attempt, and a
 * graceful close waits for a running handler; the admin's figures, list, get, replay (twice at once:
 * the handlers run once), replayAll and remove.
 */
import {
  ConfigurationError,
  createWebhooks,
  EventDeadLetteredError,
  type InboxStats,
  MemoryStore,
  type WebhookError,
  type Webhooks,
} from 'service-webhooks';
import {
  eventJobId,
  type PgBossInbox,
  type PgBossWorker,
  pgBossInbox,
  pgBossInboxAdmin,
  pgBossInboxStats,
  startPgBossWorker,
} from 'service-webhooks/pg-boss';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { sealed } from '../support/sealed-entry.js';
import { waitUntil } from '../support/wait-until.js';
import {
  BOSS_VERSIONS,
  dropSchema,
  startProxy,
  type TestBoss,
  uniqueQueue,
  uniqueSchema,
} from './support.js';

const SECRET = 'whsec_pgboss_tests';
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

  async function countJobs(queue: string): Promise<number> {
    const { rows } = await boss
      .getDb()
      .executeSql(`SELECT count(*)::int AS n FROM ${schema}.job WHERE name = $1`, [queue]);
    return (rows[0] as { n: number }).n;
  }

  /** A door and a worker receiver on one store, and what the handlers saw. */
  function setup() {
    const queue = uniqueQueue('inbox');
    const store = new MemoryStore();
    const inbox = pgBossInbox({ boss, queue });
    const errors: WebhookError[] = [];
    // One receiver is the door (its inbox) and the worker's (`process`), as in a single-process app.
    const webhooks = createWebhooks({
      secret: SECRET,
      store,
      inbox,
      leaseSeconds: 3,
      handlerTimeoutMs: 2_000,
    });
    const door = webhooks;
    webhooks.onError((error) => {
      errors.push(error);
    });
    const admin = pgBossInboxAdmin({ boss, queue, schema });
    return { queue, store, inbox, door, webhooks, errors, admin };
  }

  async function deliver(door: Webhooks, event: object) {
    const body = JSON.stringify(event);
    return door.handle({
      body,
      headers: { 'content-type': 'application/json', 'x-service-signature': signPayload(body, SECRET) },
    });
  }

  async function start(webhooks: Webhooks, queue: string, options: object = {}): Promise<PgBossWorker> {
    const worker = await startPgBossWorker(webhooks, {
      boss,
      queue,
      schema,
      attempts: 3,
      backoff: [200],
      pollIntervalMs: 50,
      expireInSeconds: 60,
      handlerTimeoutMs: 2_000,
      monitor: false,
      ...options,
    });
    cleanups.push(() => worker.close());
    return worker;
  }

  describe('door', () => {
    test('an event is queued once and handled once', async () => {
      const { queue, door, webhooks } = setup();
      const runs: number[] = [];
      webhooks.on('user.created', async (_event, ctx) => {
        runs.push(ctx.attempt);
      });
      const event = createTestEvent('user.created');
      expect((await deliver(door, event)).status).toBe(200);
      expect(await countJobs(queue)).toBe(1);
      await start(webhooks, queue);
      await waitUntil('the handler', () => runs.length === 1);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(runs).toEqual([1]);
    });

    test('a second enqueue of one key adds nothing, before and after the first job completed', async () => {
      const { queue, inbox, webhooks } = setup();
      const event = createTestEvent('user.created');
      const entry = await sealed({ event, receivedAt: Date.now(), secretIndex: 0 }, SECRET);
      const key = `scope\n${event.id}${'x'.repeat(380)}`;
      await inbox.enqueue(entry, key);
      await inbox.enqueue(entry, key);
      expect(await countJobs(queue)).toBe(1);
      const id = eventJobId(queue, key);
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      let runs = 0;
      webhooks.on('user.created', async () => {
        runs++;
      });
      await start(webhooks, queue);
      await waitUntil(
        'the job to complete',
        async () => (await boss.getJobById(queue, id))?.state === 'completed',
      );
      await inbox.enqueue(entry, key);
      expect(await countJobs(queue)).toBe(1);
      expect((await boss.getJobById(queue, id))?.state).toBe('completed');
      expect(runs).toBe(1);
    });

    test("the entry's traceparent travels in the job's data, as it is, to the worker's process()", async () => {
      const { queue, inbox, webhooks } = setup();
      const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      const event = createTestEvent('user.created');
      const entry = await sealed({ event, receivedAt: Date.now(), secretIndex: 0, traceparent }, SECRET);
      await inbox.enqueue(entry, `trace-${event.id}`);
      const job = await boss.getJobById(queue, eventJobId(queue, `trace-${event.id}`));
      expect(job?.data?.traceparent).toBe(traceparent);
      const entries: unknown[] = [];
      const observed = {
        process: (...args: Parameters<Webhooks['process']>) => {
          entries.push(args[0]);
          return webhooks.process(...args);
        },
        report: (...args: Parameters<Webhooks['report']>) => webhooks.report(...args),
        telemetry: undefined,
      } as unknown as Webhooks;
      await start(observed, queue);
      await waitUntil('the run', () => entries.length === 1);
      // The seal with it, and the door's attempt, which pg-boss carries in the data.
      expect(entries[0]).toEqual({ ...entry, attempt: 1 });
    });

    test('PostgreSQL unreachable: enqueue rejects and the door answers 503 inbox_unavailable', async () => {
      const proxy = await startProxy();
      const schemaOfDown = uniqueSchema();
      const down = await version.start(schemaOfDown, proxy.url);
      cleanups.push(async () => {
        await proxy.close();
        await down.stop({ graceful: false, wait: true }).catch(() => {});
        await dropSchema(schemaOfDown);
      });
      // Connected and working, then PostgreSQL is cut off from it.
      const before = pgBossInbox({ boss: down, queue: uniqueQueue('down') });
      await before.enqueue(
        { event: createTestEvent('user.created'), receivedAt: Date.now(), secretIndex: 0 },
        'ok',
      );
      proxy.cut();
      const inbox: PgBossInbox = before;
      const door = createWebhooks({ secret: SECRET, store: new MemoryStore(), inbox });
      const errors: WebhookError[] = [];
      door.onError((error) => {
        errors.push(error);
      });
      const event = createTestEvent('user.created');
      await expect(inbox.enqueue({ event, receivedAt: Date.now(), secretIndex: 0 }, 'k')).rejects.toThrow();
      const answer = await deliver(door, event);
      expect(answer.status).toBe(503);
      expect(answer.body).toContain('inbox_unavailable');
      expect(errors.map((error) => error.code)).toContain('inbox_unavailable');
    });

    test('options are checked at construction', () => {
      expect(() => pgBossInbox({ boss: {} as never })).toThrow(/boss/);
      expect(() => pgBossInbox({ boss, queue: 'no spaces' })).toThrow(/queue/);
      expect(() => pgBossInboxAdmin({ boss, schema: 'x;drop' })).toThrow(/schema/);
    });

    test('pgBossInboxStats checks its schema as every entry point does: an injection is refused before any SQL runs', async () => {
      // A real pg-boss whose database handle counts the statements sent through it.
      const sent: string[] = [];
      const counting = {
        getDb: () => ({
          executeSql: (text: string, values?: unknown[]) => {
            sent.push(text);
            return boss.getDb().executeSql(text, values);
          },
        }),
      } as unknown as TestBoss;
      const queue = uniqueQueue('stats-schema');
      const injected = `pg_sleep(2) AS s, ${schema}`;
      const started = Date.now();
      const refused = await pgBossInboxStats(counting, queue, injected).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(ConfigurationError);
      expect((refused as ConfigurationError).code).toBe('invalid_configuration');
      expect((refused as Error).message).toMatch(/pgBossInboxStats\(\) `schema`/);
      expect(sent).toEqual([]);
      expect(Date.now() - started).toBeLessThan(1000);
      // The checked name still reads the figures.
      expect(await pgBossInboxStats(counting, queue, schema)).toMatchObject({ depth: 0, deadLettered: 0 });
      expect(sent).toHaveLength(1);
    });
  });

  describe('worker', () => {
    test('retries follow the schedule with ctx.attempt 1, 2, 3; the last failure is a dead letter with its cause', async () => {
      const { queue, door, webhooks, errors, admin } = setup();
      const attempts: { attempt: number; at: number }[] = [];
      webhooks.on('user.created', async (_event, ctx) => {
        attempts.push({ attempt: ctx.attempt, at: Date.now() });
        throw new Error(`crm down (attempt ${ctx.attempt})`);
      });
      await start(webhooks, queue, { backoff: [300, 600] });
      const event = createTestEvent('user.created');
      await deliver(door, event);
      // The report comes last: the worker writes the letter, completes the job, then says so.
      const reported = () => errors.filter((error) => error instanceof EventDeadLetteredError);
      await waitUntil(
        'the dead letter, reported',
        async () => reported().length === 1 && (await admin.stats()).deadLettered === 1,
      );
      expect(attempts.map((run) => run.attempt)).toEqual([1, 2, 3]);
      expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(300);
      expect(attempts[2]!.at - attempts[1]!.at).toBeGreaterThanOrEqual(600);
      const { items, total } = await admin.list();
      expect(total).toBe(1);
      expect(items[0]).toMatchObject({ eventId: event.id, eventType: 'user.created', attempts: 3 });
      expect(items[0]!.lastError).toContain('crm down (attempt 3)');
      expect(items[0]!.stacktrace.join('\n')).toContain('Error: crm down');
      // Its cause is the last attempt's handler failure, which holds what the handler threw.
      expect(reported()[0]!.cause).toMatchObject({ cause: { message: 'crm down (attempt 3)' } });
      expect(await admin.stats()).toMatchObject({
        waiting: 0,
        active: 0,
        delayed: 0,
        depth: 0,
        deadLettered: 1,
      });
    });

    test('one event failing twice, with one logger for the receiver and the worker (logger: console): each failure reported once', async () => {
      const queue = uniqueQueue('inbox');
      // What console would print: each call, and the stack of every error it was given.
      const calls: { level: string; message: string; record: Record<string, unknown> }[] = [];
      const capture =
        (level: string) =>
        (record: object, message?: string): void => {
          calls.push({ level, message: message ?? '', record: record as Record<string, unknown> });
        };
      const logger = { info: capture('info'), warn: capture('warn'), error: capture('error') };
      const webhooks = createWebhooks({ secret: SECRET, store: new MemoryStore(), logger });
      webhooks.on('user.created', () => {
        throw new Error('crm.example refused the contact');
      });
      const admin = pgBossInboxAdmin({ boss, queue, schema });
      await start(webhooks, queue, { attempts: 2, backoff: [100], logger });
      // Sealed as the door seals it: an unsealed entry is dead-lettered at once, before any handler.
      await pgBossInbox({ boss, queue }).enqueue(
        await sealed(
          { event: createTestEvent('user.created'), receivedAt: Date.now(), secretIndex: 0 },
          SECRET,
        ),
        'k',
      );
      await waitUntil('the dead letter', async () => (await admin.stats()).deadLettered === 1);
      // The worker says so once the failed job is completed too, a moment after the letter is written.
      await waitUntil('the dead letter to be logged', async () =>
        calls.some((call) => call.message === 'webhook inbox: event dead-lettered'),
      );
      const stacks = calls.filter((call) =>
        Object.values(call.record).some((value) => value instanceof Error),
      );
      expect(stacks.map((call) => call.message)).toEqual([
        'webhook delivery failed',
        'webhook delivery failed',
      ]);
      // The worker's lines say what it does next and name the failure in one line.
      const worker = calls.filter((call) => call.message.startsWith('webhook inbox: '));
      expect(worker.map((call) => [call.message, call.record.error])).toEqual([
        ['webhook inbox: attempt failed; retrying', 'handler_failed: crm.example refused the contact'],
        ['webhook inbox: event dead-lettered', 'handler_failed: crm.example refused the contact'],
      ]);
    });

    test('a poison entry is dead-lettered at once', async () => {
      const { queue, inbox, webhooks, admin } = setup();
      let runs = 0;
      webhooks.onAny(async () => {
        runs++;
      });
      await inbox.enqueue(
        { event: { nonsense: true }, receivedAt: Date.now(), secretIndex: 0 } as never,
        'poison',
      );
      await start(webhooks, queue, { attempts: 10, backoff: [10_000] });
      await waitUntil('the dead letter', async () => (await admin.stats()).deadLettered === 1);
      const [letter] = (await admin.list()).items;
      expect(letter!.attempts).toBe(1);
      expect(letter!.lastError).toMatch(/invalid|entry/i);
      expect(runs).toBe(0);
    });

    test('a deferral (the event held by another run) spends no attempt', async () => {
      const { queue, inbox, store, webhooks } = setup();
      const event = createTestEvent('user.created');
      const seen: number[] = [];
      webhooks.on('user.created', async (_event, ctx) => {
        seen.push(ctx.attempt);
      });
      // Another run holds the event's claim for two seconds (the lease of a run that died).
      const other = createWebhooks({ secret: SECRET, store, leaseSeconds: 3, handlerTimeoutMs: 2_000 });
      let release!: () => void;
      const holding = new Promise<void>((resolve) => {
        release = resolve;
      });
      let started!: () => void;
      const running = new Promise<void>((resolve) => {
        started = resolve;
      });
      other.on('user.created', async () => {
        started();
        await holding;
      });
      const entry = await sealed({ event, receivedAt: Date.now(), secretIndex: 0 }, SECRET);
      const first = other.process(entry, { attempt: 1 });
      await running;
      await inbox.enqueue(entry, `k-${event.id}`);
      await start(webhooks, queue, { attempts: 1 });
      // Deferred (due later), not dead-lettered though attempts is 1. Judged on the read that saw the
      // deferral settled: a deferral sends the due-later copy, then completes the job it ran (a crash
      // between the two leaves the copy, never neither), so a read in between sees both; and once due
      // again the copy is taken (active) while the other run still holds the claim.
      let deferred: InboxStats | undefined;
      await waitUntil('the deferral', async () => {
        deferred = await pgBossInboxAdmin({ boss, queue, schema }).stats();
        return deferred.delayed === 1 && deferred.active === 0;
      });
      expect(deferred).toMatchObject({
        deadLettered: 0,
        delayed: 1,
        active: 0,
      });
      release();
      await first;
      // The other run completed: the deferred job finds the event handled.
      await waitUntil('the deferred job to end', async () => {
        const stats = await pgBossInboxAdmin({ boss, queue, schema }).stats();
        return stats.depth === 0;
      });
      expect(seen).toEqual([]);
    });

    test('a crash spends no attempt; an event that crashes every worker is dead-lettered after maxCrashes', async () => {
      const { queue, inbox, webhooks, errors, admin } = setup();
      const seen: number[] = [];
      // Every run hangs until its worker is "killed": the handler times out in this process after
      // 2 s (releasing the claim), but the abandoned worker writes nothing to pg-boss.
      webhooks.on('user.created', async (_event, ctx) => {
        seen.push(ctx.attempt);
        await new Promise((_, reject) =>
          ctx.signal.addEventListener('abort', () => reject(new Error('stopped with its worker'))),
        );
      });
      const event = createTestEvent('user.created');
      for (let crash = 1; crash <= 2; crash++) {
        // The first worker writes its settings on the queue (expiry, crash bound); the door's job
        // takes them when it is written after.
        const worker = await start(webhooks, queue, { attempts: 5, maxCrashes: 1, expireInSeconds: 3 });
        if (crash === 1)
          await inbox.enqueue(
            await sealed({ event, receivedAt: Date.now(), secretIndex: 0 }, SECRET),
            `crash-${event.id}`,
          );
        await waitUntil(`run ${crash}`, () => seen.length === crash, 20_000);
        await worker.close(true);
      }
      const last = await start(webhooks, queue, { attempts: 5, maxCrashes: 1, expireInSeconds: 3 });
      await waitUntil('the dead letter', async () => (await admin.stats()).deadLettered === 1, 20_000);
      await last.close();
      expect(seen).toEqual([1, 1]);
      const [letter] = (await admin.list()).items;
      expect(letter!.lastError).toMatch(/abandoned/);
      expect(letter!.eventId).toBe(event.id);
      expect(errors.some((error) => error instanceof EventDeadLetteredError)).toBe(true);
      expect(await admin.stats()).toMatchObject({ depth: 0, deadLettered: 1 });
    }, 40_000);

    test('graceful close waits for a running handler', async () => {
      const { queue, door, webhooks } = setup();
      let finished = false;
      let started = false;
      webhooks.on('user.created', async () => {
        started = true;
        await new Promise((resolve) => setTimeout(resolve, 700));
        finished = true;
      });
      const worker = await start(webhooks, queue);
      await deliver(door, createTestEvent('user.created'));
      await waitUntil('the handler to start', () => started);
      await worker.close();
      expect(finished).toBe(true);
      expect(await pgBossInboxAdmin({ boss, queue, schema }).stats()).toMatchObject({ depth: 0 });
    });

    test('options are checked at construction', async () => {
      const webhooks = createWebhooks({ secret: SECRET });
      await expect(startPgBossWorker(webhooks, { boss, attempts: 0 })).rejects.toThrow(/attempts/);
      await expect(
        startPgBossWorker(webhooks, { boss, expireInSeconds: 10, handlerTimeoutMs: 20_000 }),
      ).rejects.toThrow(/expireInSeconds/);
    });
  });

  describe('admin', () => {
    test('stats, list, get, replay, replayAll, remove; two replays of one dead letter at once run the handlers once', async () => {
      const { queue, door, webhooks, admin } = setup();
      let failing = true;
      const handled: string[] = [];
      webhooks.on('user.created', async (event) => {
        if (failing) throw new Error('down');
        handled.push(event.id);
      });
      const worker = await start(webhooks, queue, { attempts: 1 });
      const events = [1, 2, 3].map(() => createTestEvent('user.created'));
      for (const event of events) await deliver(door, event);
      await waitUntil('three dead letters', async () => (await admin.stats()).deadLettered === 3);
      const { items, total } = await admin.list({ limit: 2 });
      expect(total).toBe(3);
      expect(items).toHaveLength(2);
      expect((await admin.list({ offset: 2 })).items).toHaveLength(1);
      const [first, second] = items;
      expect(await admin.get(first!.jobId)).toMatchObject({ jobId: first!.jobId, eventId: first!.eventId });
      expect(await admin.get('00000000-0000-4000-8000-000000000000')).toBeUndefined();
      expect(await admin.get('not-a-uuid')).toBeUndefined();

      failing = false;
      const [a, b] = await Promise.allSettled([admin.replay(first!.jobId), admin.replay(first!.jobId)]);
      const replays = [a, b].filter((result) => result.status === 'fulfilled');
      expect(replays.length).toBeGreaterThanOrEqual(1);
      await waitUntil('the replay to run', () => handled.includes(first!.eventId));
      await admin.remove(second!.jobId);
      await expect(admin.remove(second!.jobId)).rejects.toMatchObject({ code: 'not_found' });
      await expect(admin.replay(second!.jobId)).rejects.toMatchObject({ code: 'not_found' });
      const rest = await admin.replayAll();
      expect(rest).toHaveLength(1);
      await waitUntil(
        'every replay to run',
        async () => handled.length >= 2 && (await admin.stats()).depth === 0,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(handled.sort()).toEqual([first!.eventId, rest[0]!.eventId].sort());
      expect(await admin.stats()).toMatchObject({ deadLettered: 0, depth: 0 });
      await worker.close();
    });

    test('stats tell waiting from delayed, and the oldest wait from receivedAt', async () => {
      const { queue, inbox, admin } = setup();
      const event = createTestEvent('user.created');
      await inbox.enqueue({ event, receivedAt: Date.now() - 5_000, secretIndex: 0 }, 'a');
      await boss.send(queue, { event, receivedAt: Date.now(), secretIndex: 0 }, { startAfter: 3600 });
      const stats = await admin.stats();
      expect(stats).toMatchObject({ waiting: 1, delayed: 1, active: 0, depth: 2, deadLettered: 0 });
      expect(stats.oldestWaitingMs).toBeGreaterThanOrEqual(5_000);
    });
  });
});
