/**
 * The worker's side of the inbox on pg-boss: a fetch loop that runs each queued event through
 * `webhooks.process`, retries it on the receiver's own schedule, and dead-letters it after the last
 * attempt.
 */

import type { InboxStats } from 'service-webhooks/core';
import {
  ConfigurationError,
  EventDeadLetteredError,
  formatDuration,
  INBOX_DEFAULTS,
  type InboxBackoff,
  type InboxGauges,
  type InboxLogger,
  type InboxMonitorOptions,
  type ProcessOptions,
  type WebhookEvent,
  type Webhooks,
  type WebhookTelemetry,
} from 'service-webhooks/core';
import { describeFailure, judgeFailure } from '../inbox/attempt-outcome.js';
import { type Schedule, schedule } from '../inbox/backoff.js';
import { failureFields, inboxLog } from '../inbox/log.js';
import { InboxMonitor } from '../inbox/monitor.js';
import {
  acceptUnsealedOption,
  checkReceiver,
  monitorSettings,
  wholeOption,
} from '../inbox/worker-options.js';
import {
  checkBoss,
  checkQueueName,
  continuationJobId,
  deadLetterJobId,
  deadLetterQueueOf,
  ensureQueues,
  entryOf,
  type InboxJobData,
  type PgBossJob,
  type PgBossLike,
} from './job.js';
import { checkSchema, pgBossInboxStats } from './stats.js';

/**
 * Options of {@link startPgBossWorker}.
 *
 * @example
 * ```ts
 * startPgBossWorker(webhooks, { boss, concurrency: 20, attempts: 30, backoff: { initialDelayMs: 30_000 } });
 * ```
 */
export interface PgBossWorkerOptions {
  /** A pg-boss instance, started; the worker never stops it. Its `maintenanceIntervalSeconds` is how often dead workers' jobs are found. */
  readonly boss: PgBossLike;
  /** @default 'service-webhooks-inbox' */
  readonly queue?: string;
  /** pg-boss's schema (its `schema` option), where the figures are read. @default 'pgboss' */
  readonly schema?: string;
  /** Events this worker runs at once. @default 10 */
  readonly concurrency?: number;
  /**
   * Attempts at an event before it is dead-lettered, the first included. A deferral (the event held
   * by another run) and a worker's crash spend none.
   * @default 25
   */
  readonly attempts?: number;
  /** The delays between attempts. @default INBOX_DEFAULTS.backoff */
  readonly backoff?: InboxBackoff;
  /** Budget of the handlers of one attempt. @default 300_000, the core's default for `process` */
  readonly handlerTimeoutMs?: number;
  /**
   * Run entries that carry no seal, as doors before seals wrote them: only while the entries queued
   * before the upgrade drain (see the inbox docs' "Upgrading to sealed entries"); without it such an
   * entry is dead-lettered at once as `unauthenticated_inbox_entry`. An entry whose seal is present
   * but does not hold is refused either way, and while this is on a warning is said at most once a
   * minute.
   * @default false
   */
  readonly acceptUnsealedEntries?: boolean;
  /**
   * How long a job may stay `active` before pg-boss takes it for abandoned (a worker that died) and
   * hands it out again: longer than the handlers' budget (`handlerTimeoutMs`, or the receiver's). pg-boss finds such jobs at its maintenance
   * interval, so a dead worker's events run again within `expireInSeconds` plus that interval, and
   * then once the dead run's claim in the store ended (`leaseSeconds`).
   * @default 900
   */
  readonly expireInSeconds?: number;
  /**
   * Times an event may be found abandoned by a dead worker before it is dead-lettered: an event that
   * crashes every worker that runs it must not take them down forever.
   * @default 5
   */
  readonly maxCrashes?: number;
  /** How often an idle worker asks pg-boss for events. @default 500 */
  readonly pollIntervalMs?: number;
  /** Read, log and check the inbox's figures; `false` turns it off. @default { intervalMs: 60_000, maxWaitMs: 600_000 } */
  readonly monitor?: InboxMonitorOptions | false;
  /**
   * Where the worker logs its start, retries, recoveries, dead letters and the monitor's figures: pass
   * the receiver's pino or console. A failed run's error, with its stack, is in the delivery record on
   * the receiver's `logger`; the worker's line names it in one line (`error`).
   */
  readonly logger?: InboxLogger;
}

/**
 * A running pg-boss inbox worker.
 *
 * @example
 * ```ts
 * const worker = await startPgBossWorker(webhooks, { boss });
 * process.once('SIGTERM', () => void worker.close());
 * ```
 */
export interface PgBossWorker {
  /** The pg-boss queue it runs. */
  readonly queue: string;
  /** The inbox's figures now. */
  stats(): Promise<InboxStats>;
  /**
   * Stop taking events, wait for the running handlers to settle (each at most `handlerTimeoutMs`) and
   * record their outcome. `force` does not wait and records nothing more: the running events run again
   * elsewhere once pg-boss expired their jobs and the store's lease ended, as after a crash.
   */
  close(force?: boolean): Promise<void>;
}

const WHAT = 'startPgBossWorker()';

interface WorkerSettings {
  readonly boss: PgBossLike;
  readonly queue: string;
  readonly schema: string;
  readonly concurrency: number;
  readonly attempts: number;
  readonly retries: Schedule;
  readonly handlerTimeoutMs: number | undefined;
  readonly acceptUnsealedEntries: boolean;
  readonly expireInSeconds: number;
  readonly maxCrashes: number;
  readonly pollIntervalMs: number;
  readonly monitor: Required<InboxMonitorOptions> | undefined;
  readonly telemetry: WebhookTelemetry | undefined;
}

function resolve(webhooks: Webhooks, options: PgBossWorkerOptions): WorkerSettings {
  checkReceiver(webhooks, WHAT);
  const boss = checkBoss(options?.boss, WHAT);
  const handlerTimeoutMs =
    options.handlerTimeoutMs === undefined
      ? undefined
      : wholeOption(WHAT, 'handlerTimeoutMs', options.handlerTimeoutMs, 0);
  const expireInSeconds = wholeOption(WHAT, 'expireInSeconds', options.expireInSeconds, 900);
  // The receiver's own budget is not visible from here: checked when the worker is given one.
  if (handlerTimeoutMs !== undefined && expireInSeconds * 1000 <= handlerTimeoutMs) {
    throw new ConfigurationError(
      `${WHAT} \`expireInSeconds\` (${expireInSeconds}) must be longer than \`handlerTimeoutMs\` (${handlerTimeoutMs} ms): pg-boss would take a running event for abandoned and hand it out again.`,
    );
  }
  return {
    boss,
    queue: checkQueueName(options.queue, WHAT),
    schema: checkSchema(options.schema, WHAT),
    concurrency: wholeOption(WHAT, 'concurrency', options.concurrency, 10),
    attempts: wholeOption(WHAT, 'attempts', options.attempts, INBOX_DEFAULTS.attempts),
    retries: schedule(options.backoff, WHAT),
    handlerTimeoutMs,
    acceptUnsealedEntries: acceptUnsealedOption(WHAT, options.acceptUnsealedEntries),
    expireInSeconds,
    maxCrashes: wholeOption(WHAT, 'maxCrashes', options.maxCrashes, 5, 0),
    pollIntervalMs: wholeOption(WHAT, 'pollIntervalMs', options.pollIntervalMs, 500, 10),
    monitor: monitorSettings(WHAT, options.monitor),
    telemetry: webhooks.telemetry,
  };
}

/**
 * Run the handlers of queued events from a pg-boss inbox: each job goes through `webhooks.process`
 * (claim, handlers with `ctx.attempt`, completion), so however often pg-boss hands it out (a worker
 * killed mid-handler, a second write by the door) its handlers complete once. The attempt count and
 * schedule are the worker's, kept in the job's data: a failed attempt writes the next attempt as a new
 * job due after `backoff`'s delay and completes the failed one; the last failure, or a poison entry,
 * writes a dead letter (the `<queue>-dead-letters` queue, with the cause) and reports
 * `EventDeadLetteredError` to `onError`. Resolves once the queues exist and the worker fetches.
 *
 * @example
 * ```ts
 * import PgBoss from 'pg-boss';
 * import { createWebhooks } from 'service-webhooks';
 * import { startPgBossWorker } from 'service-webhooks/pg-boss';
 *
 * const boss = new PgBoss({ connectionString: process.env.DATABASE_URL!, maintenanceIntervalSeconds: 30 });
 * await boss.start();
 * const webhooks = createWebhooks({ secret, store });
 * webhooks.on('payment.succeeded', async (event, ctx) => ledger.record(event.data, { signal: ctx.signal }));
 * const worker = await startPgBossWorker(webhooks, { boss, concurrency: 20 });
 * process.once('SIGTERM', () => void worker.close());
 * ```
 */
export async function startPgBossWorker(
  webhooks: Webhooks,
  options: PgBossWorkerOptions,
): Promise<PgBossWorker> {
  const settings = resolve(webhooks, options);
  // The worker's settings are the queue's: jobs the door writes from now on take them.
  await ensureQueues(
    settings.boss,
    settings.queue,
    { expireInSeconds: settings.expireInSeconds, maxCrashes: settings.maxCrashes },
    true,
  );
  return new RunningPgBossWorker(webhooks, settings, options.logger);
}

class RunningPgBossWorker implements PgBossWorker {
  readonly queue: string;
  readonly #webhooks: Webhooks;
  readonly #settings: WorkerSettings;
  readonly #logger: InboxLogger | undefined;
  readonly #running = new Set<Promise<void>>();
  readonly #monitor: InboxMonitor | undefined;
  readonly #stopObserving: (() => void) | undefined;
  /** Set by close: no more fetches. */
  #stopping = false;
  /** Set by close(true): running events' outcomes are no longer written, as after a crash. */
  #abandoned = false;
  #wake: (() => void) | undefined;
  #loop: Promise<void>;
  #closing: Promise<void> | undefined;
  #lastFetchWarning = 0;

  constructor(webhooks: Webhooks, settings: WorkerSettings, logger: InboxLogger | undefined) {
    this.#webhooks = webhooks;
    this.#settings = settings;
    this.#logger = logger;
    this.queue = settings.queue;
    this.#monitor =
      settings.monitor && new InboxMonitor(webhooks, settings.queue, this.stats, settings.monitor, logger);
    this.#stopObserving = settings.telemetry?.observeInbox(this.#gauges);
    const { attempts, retries, concurrency } = settings;
    this.#log(
      'info',
      { concurrency, attempts, retrySpanMs: retries.spanMs(attempts) },
      `webhook inbox worker started: ${attempts} attempts over about ${formatDuration(retries.spanMs(attempts))}`,
    );
    this.#loop = this.#fetchLoop();
  }

  readonly stats = (): Promise<InboxStats> =>
    pgBossInboxStats(this.#settings.boss, this.#settings.queue, this.#settings.schema);

  readonly close = (force = false): Promise<void> => {
    if (force) this.#abandoned = true;
    this.#closing ??= (async () => {
      this.#stopping = true;
      this.#wake?.();
      this.#monitor?.stop();
      this.#stopObserving?.();
      await this.#loop;
      if (!this.#abandoned) await Promise.all(this.#running);
    })();
    return force ? this.#closing.then(() => undefined) : this.#closing;
  };

  readonly #gauges = async (): Promise<InboxGauges> => {
    const stats = await this.stats();
    return {
      queue: this.queue,
      depth: stats.depth,
      oldestAgeSeconds: (stats.oldestWaitingMs ?? 0) / 1000,
      deadLetters: stats.deadLettered,
    };
  };

  /** Fetch as many jobs as there are free slots; sleep when there are none or the queue is empty. */
  async #fetchLoop(): Promise<void> {
    const { boss, queue, concurrency, pollIntervalMs } = this.#settings;
    while (!this.#stopping) {
      const free = concurrency - this.#running.size;
      if (free > 0) {
        let jobs: PgBossJob[] = [];
        try {
          jobs = ((await boss.fetch(queue, { batchSize: free, includeMetadata: true })) ?? []) as PgBossJob[];
        } catch (error) {
          this.#warnFetch(error);
        }
        // Jobs fetched as close began still run: a graceful close waits for them, a forced one
        // leaves them to pg-boss's expiration like the others.
        for (const job of jobs) this.#start(job);
        if (jobs.length === free) continue;
      }
      await new Promise<void>((wake) => {
        const timer = setTimeout(wake, pollIntervalMs);
        this.#wake = () => {
          clearTimeout(timer);
          wake();
        };
      });
      this.#wake = undefined;
    }
  }

  #start(job: PgBossJob): void {
    const run = this.#run(job).catch((error: unknown) => {
      // Recording the outcome failed (PostgreSQL down): the job stays active and pg-boss recovers it
      // by expiration, as after a crash; the store's claim keeps a handled event from running twice.
      this.#log(
        'warn',
        { jobId: job.id, err: error },
        'webhook inbox: could not record an outcome; pg-boss will hand the event out again',
      );
    });
    this.#running.add(run);
    void run.finally(() => {
      this.#running.delete(run);
      this.#wake?.();
    });
  }

  /** One attempt at a queued event, and what it leaves in pg-boss. */
  async #run(job: PgBossJob): Promise<void> {
    const { boss, queue, attempts, retries, handlerTimeoutMs, maxCrashes, acceptUnsealedEntries } =
      this.#settings;
    const data = (job.data ?? {}) as InboxJobData;
    const attempt = positiveOr(data.attempt, 1);
    const crashes = positiveOr(data.crashes, 0, 0) + positiveOr(job.retryCount, 0, 0);
    const event = data.event as Partial<WebhookEvent> | undefined;
    const eventId = typeof event?.id === 'string' ? event.id : `(job ${job.id})`;
    if (positiveOr(job.retryCount, 0, 0) > 0) {
      this.#log(
        'warn',
        { jobId: job.id, eventId, crashes },
        'webhook inbox: event abandoned by a worker that stopped (crash, blocked event loop); running it again',
      );
    }
    if (crashes > maxCrashes) {
      await this.#deadLetter(
        job,
        data,
        attempt,
        new Error(
          `the event was abandoned by ${crashes} workers that stopped while running it (crash, out of memory?)`,
        ),
      );
      return;
    }
    const run: { -readonly [K in keyof ProcessOptions]: ProcessOptions[K] } = { attempt };
    if (handlerTimeoutMs !== undefined) run.handlerTimeoutMs = handlerTimeoutMs;
    if (data.replay) run.replayId = data.replay.id;
    if (acceptUnsealedEntries) run.acceptUnsealed = true;
    let failure: unknown;
    let handled = false;
    try {
      await this.#webhooks.process(entryOf(data), run);
      handled = true;
    } catch (error) {
      failure = error;
    }
    if (this.#abandoned) return;
    if (handled) {
      await boss.complete(queue, job.id);
      return;
    }
    const verdict = judgeFailure(failure, attempt, attempts, retries);
    const base = { ...data, crashes };
    const root = data.root ?? job.id;
    if (verdict.kind === 'defer') {
      const deferrals = positiveOr(data.deferrals, 0, 0) + 1;
      await this.#continue(
        job,
        { ...base, root, attempt, deferrals },
        continuationJobId(root, attempt, deferrals),
        verdict.delayMs,
      );
      this.#log(
        'info',
        { jobId: job.id, eventId, delayMs: verdict.delayMs },
        'webhook inbox: event held by another worker; deferred',
      );
      return;
    }
    if (verdict.kind === 'retry') {
      const next = attempt + 1;
      // The next attempt is sealed by the receiver, bound to the door's seal the entry carries.
      const { attemptSeal: _previous, ...rest } = base;
      const { attemptSeal } = await this.#webhooks.sealAttempt(entryOf(data), next);
      await this.#continue(
        job,
        { ...rest, ...(attemptSeal === undefined ? {} : { attemptSeal }), root, attempt: next, deferrals: 0 },
        continuationJobId(root, next, 0),
        verdict.delayMs,
      );
      this.#log(
        'warn',
        { jobId: job.id, eventId, attempt, nextAttemptInMs: verdict.delayMs, ...failureFields(failure) },
        'webhook inbox: attempt failed; retrying',
      );
      return;
    }
    await this.#deadLetter(job, base, attempt, verdict.error);
  }

  /**
   * The next job of the chain, then the end of this one. Two writes, in this order: a crash between
   * them leaves both, and this job, expired, runs again as the same attempt and writes the same next
   * job (same id: nothing added); the store's claim keeps the handlers from completing twice.
   */
  async #continue(job: PgBossJob, data: InboxJobData, id: string, delayMs: number): Promise<void> {
    const { boss, queue } = this.#settings;
    const { deadLetter: _none, ...next } = data;
    await boss.send(queue, next, { id, startAfter: new Date(Date.now() + delayMs) });
    await boss.complete(queue, job.id);
  }

  /** The dead letter (a job of the dead-letter queue, with the cause), then the end of this job. */
  async #deadLetter(job: PgBossJob, data: InboxJobData, attempt: number, error: unknown): Promise<void> {
    const { boss, queue, telemetry } = this.#settings;
    const { message, stack } = describeFailure(error);
    const { deadLetter: _previous, deferrals: _d, ...kept } = data;
    const letter: InboxJobData = {
      ...kept,
      root: data.root ?? job.id,
      deadLetter: {
        lastError: message,
        stacktrace: stack === undefined ? [] : [stack],
        attempts: attempt,
        failedAt: Date.now(),
        of: job.id,
        enqueuedAt: timeOf(job.createdOn) ?? Date.now(),
        ...(job.startedOn ? { lastAttemptAt: timeOf(job.startedOn) } : {}),
      },
    };
    // Dead letters stay until replayed or removed: ten years is pg-boss's way of saying so.
    await boss.send(deadLetterQueueOf(queue), letter, {
      id: deadLetterJobId(job.id),
      retentionSeconds: 10 * 365 * 86_400,
    });
    await boss.complete(queue, job.id);
    const event = data.event as Partial<WebhookEvent> | undefined;
    const eventId = typeof event?.id === 'string' ? event.id : `(job ${job.id})`;
    const eventType = typeof event?.type === 'string' ? event.type : undefined;
    this.#log(
      'error',
      { jobId: job.id, eventId, eventType, attempt, ...failureFields(error) },
      'webhook inbox: event dead-lettered',
    );
    telemetry?.deadLettered(eventType);
    this.#webhooks.report(
      new EventDeadLetteredError(eventId, attempt, { cause: error }),
      event as WebhookEvent,
    );
  }

  #warnFetch(error: unknown): void {
    const now = Date.now();
    if (now - this.#lastFetchWarning < 60_000) return;
    this.#lastFetchWarning = now;
    this.#log('warn', { err: error }, 'webhook inbox: could not fetch events from PostgreSQL; retrying');
  }

  #log(level: 'info' | 'warn' | 'error', record: Record<string, unknown>, message: string): void {
    inboxLog(this.#logger, level, { inbox: this.queue, ...record }, message);
  }
}

function positiveOr(value: unknown, fallback: number, min = 1): number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min ? value : fallback;
}

function timeOf(value: Date | string | null | undefined): number | undefined {
  if (value === null || value === undefined) return undefined;
  const time = new Date(value).getTime();
  return Number.isNaN(time) ? undefined : time;
}
