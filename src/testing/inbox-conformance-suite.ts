import {
  type AnyWebhookEvent,
  ConfigurationError,
  DeadLetterError,
  EventDeadLetteredError,
  type InboxEntry,
} from 'service-webhooks/core';
import { deliver } from './deliver.js';
import { INBOX_RULES, InboxConformanceError, type InboxRule } from './inbox-conformance-error.js';
import {
  CLOCK_TOLERANCE_MS,
  CRASH_LEASE_SECONDS,
  check,
  deadLetterOf,
  keyOf,
  newEvent,
  refusedAsDeadLetterError,
  SECRET,
  type Settings,
  SHORT_LEASE,
  TENANT_HEADER,
  TENANT_SECRETS,
  Trial,
} from './inbox-trial.js';
import type { InboxUnderTest } from './inbox-under-test.js';

export { INBOX_RULES, InboxConformanceError, type InboxRule } from './inbox-conformance-error.js';

/**
 * How {@link inboxConformanceSuite} runs: the engine under test, behind {@link InboxUnderTest}, and
 * the test runner's functions (vitest, jest, mocha and `node:test` all fit).
 *
 * @example
 * ```ts
 * inboxConformanceSuite({ name: 'my engine', describe, test, createInbox: async () => myEngineUnderTest() });
 * ```
 */
export interface InboxConformanceOptions {
  /** Name of the describe block, such as `'pg-boss'`. */
  readonly name: string;
  /** A fresh inbox (its own queue, nothing in it) for one test. */
  readonly createInbox: () => Promise<InboxUnderTest>;
  /** The runner's `describe`. */
  readonly describe: (name: string, body: () => void) => unknown;
  /** The runner's `test` (or `it`); the third argument is a timeout in ms. */
  readonly test: (name: string, body: () => Promise<void>, timeoutMs?: number) => unknown;
  /**
   * The shortest delay between attempts the engine honours: the schedule tests use it. SQS counts
   * visibility in whole seconds, so `1_000` there.
   * @default 200
   */
  readonly retryDelayMs?: number;
  /**
   * How much later than scheduled an attempt may start (the engine's polling interval, its
   * scheduler's tick).
   * @default 1_000
   */
  readonly scheduleSlackMs?: number;
  /**
   * Whether a second `enqueue` of one key adds nothing to the queue (BullMQ and pg-boss by job id, a
   * FIFO SQS queue by deduplication id). `false` declares an engine that may hold two copies (a
   * standard SQS queue) and relies on the store's claim: the suite then checks that the handlers
   * still complete once.
   * @default true
   */
  readonly dedupesEnqueue?: boolean;
  /**
   * The `recoveryMs` the suite asks of workers: how soon a dead worker's events may be handed out
   * again (BullMQ's lock, an SQS visibility timeout, a pg-boss expiry). Raise it for an engine that
   * counts in coarser units.
   * @default 1_000
   */
  readonly recoveryMs?: number;
}

/** Throws ConfigurationError for the first option that is wrong, before any test is registered. */
function checkOptions(options: InboxConformanceOptions): void {
  const what = 'inboxConformanceSuite()';
  if (typeof options !== 'object' || options === null)
    throw new ConfigurationError(`${what} needs an options object.`);
  if (typeof options.name !== 'string' || options.name === '')
    throw new ConfigurationError(`${what} \`name\` must be a non-empty string.`);
  for (const name of ['createInbox', 'describe', 'test'] as const) {
    if (typeof options[name] !== 'function')
      throw new ConfigurationError(`${what} \`${name}\` must be a function; got ${typeof options[name]}.`);
  }
  for (const [name, min] of [
    ['retryDelayMs', 1],
    ['scheduleSlackMs', 0],
    ['recoveryMs', 1],
  ] as const) {
    const value = options[name];
    if (value !== undefined && (!Number.isSafeInteger(value) || value < min))
      throw new ConfigurationError(
        `${what} \`${name}\` must be a whole number of milliseconds ≥ ${min}; got ${String(value)}.`,
      );
  }
  if (options.dedupesEnqueue !== undefined && typeof options.dedupesEnqueue !== 'boolean')
    throw new ConfigurationError(`${what} \`dedupesEnqueue\` must be true or false.`);
}

/**
 * The executable form of the inbox contract (the docs' "What is guaranteed"), for
 * every engine: BullMQ, SQS, pg-boss, yours. Registers one describe block whose tests each build
 * real receivers on one shared in-memory store (the store contract's reference model) over a fresh inbox from `createInbox`, and fail with
 * {@link InboxConformanceError} naming the rule broken: acknowledged only once durable; a second
 * enqueue of one key adds nothing; at-least-once delivery with exactly-once completion; a crashed
 * worker recovered without spending an attempt; retries on schedule; the last failure dead-lettered
 * with its cause; a replay (even a doubled one) runs once; poison dead-lettered at once; dead
 * letters got and removed; a forged entry (unsealed, or changed since the door sealed it) never runs
 * a handler; a tenant's entry keeps its tenant (an engine carries every field the door writes).
 *
 * @example
 * ```ts
 * import { describe, test } from 'vitest';
 * import { inboxConformanceSuite } from 'service-webhooks/testing';
 *
 * inboxConformanceSuite({ name: 'my engine', describe, test, createInbox: () => myEngineUnderTest() });
 * ```
 */
export function inboxConformanceSuite(options: InboxConformanceOptions): void {
  checkOptions(options);
  const retryDelayMs = options.retryDelayMs ?? 200;
  const scheduleSlackMs = options.scheduleSlackMs ?? 1_000;
  const recoveryMs = options.recoveryMs ?? 1_000;
  const settings: Settings = {
    retryDelayMs,
    scheduleSlackMs,
    dedupesEnqueue: options.dedupesEnqueue ?? true,
    recoveryMs,
    // Long enough for a crash recovery (lock, then lease) and a few retries on a busy machine.
    waitMs: 10_000 + 2 * recoveryMs + CRASH_LEASE_SECONDS * 1_000 + 4 * (retryDelayMs + scheduleSlackMs),
  };
  const timeoutMs = settings.waitMs * 3;

  const it = (rule: InboxRule, detail: string, body: (trial: Trial) => Promise<void>) =>
    options.test(
      `${INBOX_RULES[rule]}: ${detail}`,
      async () => {
        const trial = new Trial(await options.createInbox(), settings);
        let failed = false;
        try {
          await body(trial);
        } catch (error) {
          failed = true;
          throw error;
        } finally {
          // A failure to close must not hide the test's own failure.
          await trial.close().catch((error) => {
            if (!failed) throw error;
          });
        }
      },
      timeoutMs,
    );

  options.describe(`${options.name} conforms to the inbox contract`, () => {
    it(
      'durable',
      'an enqueued entry runs on a worker started after it; the door answers 200, or 503 when its queue is down',
      async (trial) => {
        const { inbox } = trial.underTest;
        const queued = newEvent();
        await inbox.enqueue(await trial.entryOf(queued), keyOf(queued));
        const door = trial.receiver('door', { inbox });
        const delivered = newEvent();
        const answer = await deliver(door.webhooks, delivered, { secret: SECRET });
        check('durable', answer.status === 200, () => `the door answered ${answer.status} ${answer.body}`);
        await trial.startWorker('worker');
        await trial.drained('durable', [queued, delivered]);
        check(
          'durable',
          trial.completed(queued) === 1 && trial.completed(delivered) === 1,
          () => `handled ${trial.completed(queued)} and ${trial.completed(delivered)} time(s), not once each`,
        );
        // Optional (engines cannot be taken down generically): a queue that cannot take the event.
        const unreachable = trial.underTest.unreachableInbox?.();
        if (unreachable !== undefined) {
          const refusing = trial.receiver('door without its queue', { inbox: unreachable });
          const refused = await deliver(refusing.webhooks, newEvent(), { secret: SECRET });
          check(
            'durable',
            refused.status === 503 && refused.body.includes('inbox_unavailable'),
            () => `with its queue unreachable, the door answered ${refused.status} ${refused.body}`,
          );
        }
      },
    );
    it('dedupe', 'enqueued twice, in turn and at once: one entry each, handled once', async (trial) => {
      const { inbox } = trial.underTest;
      const [first, second] = [newEvent(), newEvent()];
      await inbox.enqueue(await trial.entryOf(first), keyOf(first));
      await inbox.enqueue(await trial.entryOf(first), keyOf(first));
      if (trial.settings.dedupesEnqueue) {
        const depth = await trial.depth();
        check('dedupe', depth === 1, () => `depth ${depth} after enqueueing one key twice in turn`);
      }
      const secondEntry = await trial.entryOf(second);
      await Promise.all([
        inbox.enqueue(secondEntry, keyOf(second)),
        inbox.enqueue(secondEntry, keyOf(second)),
      ]);
      if (trial.settings.dedupesEnqueue) {
        const depth = await trial.depth();
        check('dedupe', depth === 2, () => `depth ${depth} after enqueueing two keys twice each`);
      }
      // A short lease: a copy that finds the event claimed is deferred for about the lease, and the
      // test waits for the copies too (an engine that keeps them, dedupesEnqueue: false).
      await trial.startWorker('worker', {}, SHORT_LEASE);
      await trial.drained('dedupe', [first, second]);
      check(
        'dedupe',
        trial.completed(first) === 1 && trial.completed(second) === 1,
        () => `handled ${trial.completed(first)} and ${trial.completed(second)} time(s), not once each`,
      );
    });

    it('exactlyOnce', '50 events through the door, 3 workers: each handled exactly once', async (trial) => {
      const door = trial.receiver('door', { inbox: trial.underTest.inbox });
      const events = Array.from({ length: 50 }, newEvent);
      const answers = await Promise.all(
        events.map((event) => deliver(door.webhooks, event, { secret: SECRET })),
      );
      const refused = answers.filter((answer) => answer.status !== 200);
      check(
        'exactlyOnce',
        refused.length === 0,
        () => `the door refused ${refused.length}: ${refused[0]?.body}`,
      );
      // A handler slow enough that the workers' fetches overlap.
      trial.behaviour = () => new Promise((resolve) => setTimeout(resolve, 10));
      await Promise.all(['a', 'b', 'c'].map((name) => trial.startWorker(`worker ${name}`)));
      await trial.drained('exactlyOnce', events);
      const twice = events.filter((event) => trial.completed(event) !== 1);
      check('exactlyOnce', twice.length === 0, () => `${twice.length} event(s) handled more than once`);
    });

    it('crash', 'a worker killed mid-handler: another runs the event once, as attempt 1', async (trial) => {
      const event = newEvent();
      trial.behaviour = (_event, _context, worker) =>
        worker === 'doomed' ? trial.hang() : Promise.resolve();
      // A lease shorter than the default, and a handler budget within it, as createWebhooks requires.
      const doomed = await trial.startWorker('doomed', {}, SHORT_LEASE);
      await trial.underTest.inbox.enqueue(await trial.entryOf(event), keyOf(event));
      await trial.waitUntil(
        'crash',
        'the doomed worker to start the handler',
        () => trial.runsOf(event).length > 0,
      );
      // As SIGKILL: its claim is neither renewed nor released, and the engine hears nothing more.
      doomed.partition();
      await doomed.worker.crash();
      await trial.startWorker('heir', {}, SHORT_LEASE);
      await trial.drained('crash', [event]);
      const completed = trial.runsOf(event).filter((run) => run.outcome === 'completed');
      check('crash', completed.length === 1, () => `handled ${completed.length} times after the crash`);
      check(
        'crash',
        completed[0]!.attempt === 1,
        () => `the recovered run saw ctx.attempt ${completed[0]!.attempt}: the crash spent an attempt`,
      );
    });

    it(
      'schedule',
      `fails twice on backoff [d, 2d] (d = ${retryDelayMs} ms), then succeeds`,
      async (trial) => {
        const event = newEvent();
        trial.behaviour = async (_event, context) => {
          if (context.attempt < 3) throw new Error(`conformance: attempt ${context.attempt} fails`);
        };
        await trial.startWorker('worker', { attempts: 3, backoff: [retryDelayMs, 2 * retryDelayMs] });
        await trial.underTest.inbox.enqueue(await trial.entryOf(event), keyOf(event));
        await trial.drained('schedule', [event]);
        const runs = trial.runsOf(event);
        const attempts = runs.map((run) => run.attempt);
        check(
          'schedule',
          attempts.join() === '1,2,3',
          () => `ctx.attempt ran ${attempts.join(', ')}, not 1, 2, 3`,
        );
        for (const [index, delay] of [retryDelayMs, 2 * retryDelayMs].entries()) {
          const gap = runs[index + 1]!.startedAt - runs[index]!.startedAt;
          check(
            'schedule',
            gap >= delay - CLOCK_TOLERANCE_MS && gap <= delay + scheduleSlackMs,
            () =>
              `attempt ${index + 2} started ${gap} ms after attempt ${index + 1}; the schedule says ${delay} ms (slack ${scheduleSlackMs} ms)`,
          );
        }
      },
    );

    it('deadLetter', 'attempts: 2, always failing: dead-lettered with its cause, reported', async (trial) => {
      const event = newEvent();
      const cause = `conformance: downstream refused ${event.id}`;
      trial.behaviour = async () => {
        throw new Error(cause);
      };
      await trial.startWorker('worker', { attempts: 2 });
      await trial.underTest.inbox.enqueue(await trial.entryOf(event), keyOf(event));
      const { admin } = trial.underTest;
      await trial.waitUntil('deadLetter', 'the event in the dead-letter list', async () =>
        Boolean(await deadLetterOf(admin, event)),
      );
      const letter = (await deadLetterOf(admin, event))!;
      check(
        'deadLetter',
        letter.attempts === 2,
        () => `the dead letter says ${letter.attempts} attempts, not 2`,
      );
      check(
        'deadLetter',
        letter.lastError.includes(cause),
        () => `lastError ${JSON.stringify(letter.lastError)} lacks the handler's message`,
      );
      check(
        'deadLetter',
        letter.entry?.event?.id === event.id,
        () => `the dead letter's entry holds event ${letter.entry?.event?.id}`,
      );
      await trial.waitUntil('deadLetter', 'onError to receive EventDeadLetteredError', () =>
        trial.errors.some(({ error }) => error instanceof EventDeadLetteredError),
      );
      const reported = trial.errors.find(({ error }) => error instanceof EventDeadLetteredError)!
        .error as EventDeadLetteredError;
      check(
        'deadLetter',
        reported.attempts === 2 && reported.message.includes(event.id),
        () => `onError was told: ${reported.message} (after ${reported.attempts} attempts)`,
      );
      const runs = trial.runsOf(event).length;
      check('deadLetter', runs === 2, () => `the handler ran ${runs} times, not 2`);
    });

    it('replay', 'replayed twice at once: runs once more, leaves the list; replayAll too', async (trial) => {
      const failing = new Set<string>();
      trial.behaviour = async (event) => {
        if (failing.has(event.id)) throw new Error(`conformance: ${event.id} fails`);
      };
      await trial.startWorker('worker', { attempts: 1 });
      const { admin, inbox } = trial.underTest;
      const deadLettered = async (events: AnyWebhookEvent[]) => {
        for (const event of events) {
          failing.add(event.id);
          await inbox.enqueue(await trial.entryOf(event), keyOf(event));
        }
        await trial.waitUntil('replay', `${events.length} dead letter(s)`, async () =>
          (await Promise.all(events.map((event) => deadLetterOf(admin, event)))).every(Boolean),
        );
        for (const event of events) failing.delete(event.id);
        return Promise.all(events.map(async (event) => (await deadLetterOf(admin, event))!));
      };

      const event = newEvent();
      const [letter] = await deadLettered([event]);
      const replays = await Promise.allSettled([admin.replay(letter!.jobId), admin.replay(letter!.jobId)]);
      check(
        'replay',
        replays.some((replay) => replay.status === 'fulfilled'),
        () => `both replays failed: ${String((replays[0] as PromiseRejectedResult).reason)}`,
      );
      for (const replay of replays) {
        check(
          'replay',
          replay.status === 'fulfilled' || replay.reason instanceof DeadLetterError,
          () =>
            `a concurrent replay threw ${String((replay as PromiseRejectedResult).reason)}, not DeadLetterError`,
        );
      }
      await trial.drained('replay', [event]);
      check(
        'replay',
        trial.completed(event) === 1,
        () => `replayed twice, the handler completed ${trial.completed(event)} times`,
      );
      check(
        'replay',
        (await admin.get(letter!.jobId)) === undefined,
        () => 'the replayed dead letter is still listed',
      );
      const again = await refusedAsDeadLetterError(() => admin.replay(letter!.jobId));
      check(
        'replay',
        again === undefined,
        () => `replaying a replayed dead letter: ${again}, not DeadLetterError`,
      );

      const others = [newEvent(), newEvent()];
      await deadLettered(others);
      const all = await admin.replayAll();
      check('replay', all.length === 2, () => `replayAll replayed ${all.length}, not 2`);
      await trial.drained('replay', others);
      const counts = others.map((other) => trial.completed(other));
      check(
        'replay',
        counts.join() === '1,1',
        () => `after replayAll the handlers completed ${counts.join(' and ')} times`,
      );
      const { total } = await admin.list();
      check('replay', total === 0, () => `${total} dead letter(s) left after replayAll`);
    });

    it(
      'poison',
      'an entry without an event, and one the envelope refuses: dead-lettered after one attempt',
      async (trial) => {
        await trial.startWorker('worker', { attempts: 5 });
        const { admin, underTest } = { admin: trial.underTest.admin, underTest: trial.underTest };
        await underTest.enqueueRaw({ receivedAt: Date.now(), secretIndex: 0 }, 'conformance:poison-no-event');
        const refused = { ...newEvent(), type: 42 };
        await underTest.enqueueRaw(
          { event: refused, receivedAt: Date.now(), secretIndex: 0 },
          keyOf(refused),
        );
        await trial.waitUntil(
          'poison',
          'both poison entries in the dead-letter list',
          async () => (await admin.list()).total === 2,
          async () => `${(await admin.list()).total} dead letter(s)`,
        );
        const { items } = await admin.list();
        const spent = items.map((item) => item.attempts);
        check(
          'poison',
          spent.every((attempts) => attempts === 1),
          () => `the poison entries were dead-lettered after ${spent.join(' and ')} attempts, not 1`,
        );
        check(
          'poison',
          trial.runs.length === 0,
          () => `a handler ran ${trial.runs.length} time(s) on poison`,
        );
      },
    );

    it(
      'forged',
      'entries the door did not write as they are (no seal, an edited event, a trace context added): dead-lettered at once, reported, no handler run',
      async (trial) => {
        await trial.startWorker('worker', { attempts: 5 });
        const { admin, inbox } = trial.underTest;
        const genuine = newEvent();
        const [unsealed, edited, retraced] = [newEvent(), newEvent(), newEvent()];
        // Whoever can write to the queue: an entry made up whole, and two of the door's own changed.
        const editedEntry = await trial.entryOf(edited);
        const forgeries: [string, unknown][] = [
          ['unsealed', { event: unsealed, receivedAt: Date.now(), secretIndex: 0 }],
          ['edited', { ...editedEntry, event: { ...edited, data: { ...edited.data, forged: true } } }],
          [
            'retraced',
            {
              ...(await trial.entryOf(retraced)),
              traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00',
            },
          ],
        ];
        for (const [name, forged] of forgeries)
          await trial.underTest.enqueueRaw(forged, `conformance:forged-${name}`);
        await inbox.enqueue(await trial.entryOf(genuine), keyOf(genuine));
        const refused = () =>
          trial.errors.filter(({ error }) => error.code === 'unauthenticated_inbox_entry').length;
        // All three effects of a refusal are awaited together: an engine may show the dead letter
        // before the worker that refused it has reported it, or the other way round.
        await trial.waitUntil(
          'forged',
          'the three forged entries in the dead-letter list and reported, and the genuine one handled',
          async () => (await admin.list()).total === 3 && trial.completed(genuine) === 1 && refused() >= 3,
          async () =>
            `${(await admin.list()).total} dead letter(s), ${refused()} reported, the genuine one handled ${trial.completed(genuine)} time(s)`,
        );
        const ran = trial.runs.filter((run) => run.eventId !== genuine.id).map((run) => run.eventId);
        check('forged', ran.length === 0, () => `a handler ran on forged entries: ${ran.join(', ')}`);
        const { items } = await admin.list();
        const spent = items.map((item) => item.attempts);
        check(
          'forged',
          spent.every((attempts) => attempts === 1),
          () => `the forged entries were dead-lettered after ${spent.join(' and ')} attempts, not 1`,
        );
      },
    );

    it(
      'tenant',
      'one event id for two tenants through a door of many tenants: each queued with its tenant, run once with ctx.tenant; one moved to the other tenant is refused',
      async (trial) => {
        await trial.startWorker('worker', {}, { tenants: true });
        const { inbox, admin } = trial.underTest;
        const door = trial.receiver('door', { inbox, tenants: true }).webhooks;
        const event = newEvent();
        for (const tenant of ['acme', 'globex']) {
          const answer = await deliver(door, event, {
            secret: TENANT_SECRETS[tenant]!,
            headers: { [TENANT_HEADER]: tenant },
          });
          check('tenant', answer.status === 200, () => `the door answered ${answer.status} ${answer.body}`);
        }
        await trial.waitUntil(
          'tenant',
          'the event handled once for each tenant',
          () => trial.completed(event) === 2,
          () => `runs: ${JSON.stringify(trial.runsOf(event).map((run) => [run.tenant, run.outcome]))}`,
        );
        const tenants = trial
          .runsOf(event)
          .map((run) => String(run.tenant))
          .sort();
        check(
          'tenant',
          tenants.join(' ') === 'acme globex',
          () => `the handlers saw ctx.tenant ${tenants.join(' and ')}, not acme and globex`,
        );
        // Whoever can write to the queue moves acme's entry, seal and all, to globex.
        const moved = newEvent();
        const written: InboxEntry[] = [];
        const copier = trial.receiver('copier', {
          tenants: true,
          inbox: { enqueue: async (entry) => void written.push(entry) },
        }).webhooks;
        await deliver(copier, moved, { secret: TENANT_SECRETS.acme!, headers: { [TENANT_HEADER]: 'acme' } });
        check('tenant', written[0]?.tenant === 'acme', () => `the door wrote tenant ${written[0]?.tenant}`);
        await trial.underTest.enqueueRaw({ ...written[0]!, tenant: 'globex' }, 'conformance:tenant-moved');
        await trial.waitUntil(
          'tenant',
          'the moved entry in the dead-letter list',
          async () => (await admin.list()).total === 1,
        );
        check('tenant', trial.runsOf(moved).length === 0, () => 'a handler ran on the moved entry');
      },
    );

    it(
      'admin',
      'get finds a dead letter, remove drops it; unknown ids answer undefined or DeadLetterError',
      async (trial) => {
        const { admin } = trial.underTest;
        const event = newEvent();
        trial.behaviour = async () => {
          throw new Error('conformance: fails');
        };
        await trial.startWorker('worker', { attempts: 1 });
        await trial.underTest.inbox.enqueue(await trial.entryOf(event), keyOf(event));
        await trial.waitUntil('admin', 'the dead letter', async () =>
          Boolean(await deadLetterOf(admin, event)),
        );
        const letter = (await deadLetterOf(admin, event))!;
        const got = await admin.get(letter.jobId);
        check(
          'admin',
          got?.eventId === event.id,
          () => `get(${letter.jobId}) answered ${JSON.stringify(got?.eventId)}`,
        );
        await admin.remove(letter.jobId);
        check(
          'admin',
          (await admin.get(letter.jobId)) === undefined,
          () => 'get still finds a removed dead letter',
        );
        const { total } = await admin.list();
        check('admin', total === 0, () => `${total} dead letter(s) listed after remove`);
        for (const [what, run] of [
          ['removing it again', () => admin.remove(letter.jobId)],
          ['replaying an unknown id', () => admin.replay('conformance-no-such-id')],
        ] as const) {
          const outcome = await refusedAsDeadLetterError(run);
          check('admin', outcome === undefined, () => `${what}: ${outcome}, not DeadLetterError`);
        }
        const unknown = await admin.get('conformance-no-such-id');
        check('admin', unknown === undefined, () => 'get of an unknown id answered a dead letter');
      },
    );
  });
}
