/**
 * The worker's side of the inbox: BullMQ workers that run each queued event through
 * `webhooks.process`, retry it on the receiver's own schedule, and dead-letter it after the last
 * attempt.
 */

import { DelayedError, type Job, Queue, UnrecoverableError, Worker } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import type { InboxStats } from 'service-webhooks/core';
import {
  ConfigurationError,
  EventDeadLetteredError,
  EventInProgressError,
  formatDuration,
  INBOX_DEFAULTS,
  type InboxBackoff,
  type InboxGauges,
  type InboxLogger,
  type InboxMonitorOptions,
  type ProcessOptions,
  type ProcessResult,
  type WebhookEvent,
  type Webhooks,
  type WebhookTelemetry,
} from 'service-webhooks/core';
import { describeFailure, isPoison } from '../inbox/attempt-outcome.js';
import { type Schedule, schedule } from '../inbox/backoff.js';
import { failureFields, inboxLog } from '../inbox/log.js';
import { InboxMonitor } from '../inbox/monitor.js';
import {
  acceptUnsealedOption,
  checkReceiver,
  monitorSettings,
  wholeOption,
} from '../inbox/worker-options.js';
import { BackgroundErrors } from '../stores/background-errors.js';
import { EvictionGuard } from '../stores/redis-eviction.js';
import {
  type InboxConnection,
  type InboxLocation,
  location,
  type OpenedClient,
  openClient,
} from './connection.js';
import type { InboxBullQueue } from './inbox-queue.js';
import { DEFAULT_QUEUE_NAME, entryOf, type InboxJobData, type InboxJobName } from './job-data.js';
import { inboxStats } from './stats.js';

/**
 * Options of {@link startInboxWorker}.
 *
 * @example
 * ```ts
 * startInboxWorker(webhooks, {
 *   connection: process.env.REDIS_URL!,
 *   concurrency: 20,
 *   attempts: 30,
 *   backoff: { initialDelayMs: 30_000, maxDelayMs: 6 * 3_600_000 },
 * });
 * ```
 */
export interface InboxWorkerOptions extends InboxLocation {
  /**
   * Redis: a URL (the worker makes its clients), or an ioredis client made with
   * `{ maxRetriesPerRequest: null }`, as BullMQ's blocking fetch needs; the worker duplicates it for
   * its own connections and never closes it. Not the door's fail-fast client.
   */
  readonly connection: InboxConnection;
  /**
   * Events this worker runs at once.
   * @default 10
   */
  readonly concurrency?: number;
  /**
   * Attempts at an event before it is dead-lettered, the first included. An attempt that found the
   * event held by another worker (`EventInProgressError`) does not count: it waits out the other
   * worker's lease instead.
   * @default 25
   */
  readonly attempts?: number;
  /**
   * The delays between attempts.
   * @default { initialDelayMs: 10_000, multiplier: 2, maxDelayMs: 14_400_000, jitter: 0.1 }: 25 attempts over about 2.4 days
   */
  readonly backoff?: InboxBackoff;
  /**
   * Budget of the handlers of one attempt; `ctx.signal` aborts at the end of it and the attempt
   * fails with `HandlerTimeoutError` (and is retried).
   * @default 300_000, the core's default for `process`
   */
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
   * BullMQ's lock on a running job, renewed while it runs: after a worker died, its events run again
   * elsewhere once the lock ended and a stalled-job check found them (at most
   * `lockDurationMs + stalledIntervalMs`), and then once the dead worker's claim in the store ended
   * (`leaseSeconds`).
   * @default 30_000
   */
  readonly lockDurationMs?: number;
  /**
   * How often a worker looks for running jobs whose worker died.
   * @default 30_000
   */
  readonly stalledIntervalMs?: number;
  /**
   * Times an event may be found abandoned by a dead worker before it is dead-lettered: an event that
   * crashes every worker that runs it (out of memory, a native crash) must not take them down forever.
   * @default 5
   */
  readonly maxStalledCount?: number;
  /**
   * How long a graceful `close()` may take once the running handlers have settled (each within its
   * budget): BullMQ's own close waits on Redis, and right after a Redis restart it could wait over a
   * minute. Past it the close is forced: the connections the worker made are dropped (a job still
   * active runs again elsewhere after its lock, as after a crash) and a warning is logged.
   * @default 10_000
   */
  readonly closeTimeoutMs?: number;
  /**
   * How many handled events' jobs stay in Redis, newest first, for inspection; 0 removes each at once.
   * (The idempotency store, not these jobs, keeps handled events from running again.)
   * @default 1_000
   */
  readonly keepCompleted?: number;
  /**
   * Read the inbox's figures every `intervalMs`, log them and report a backlog to `onError`; `false`
   * turns it off. Every worker process runs its own monitor.
   * @default { intervalMs: 60_000, maxWaitMs: 600_000 }
   */
  readonly monitor?: InboxMonitorOptions | false;
  /** A name for this worker, stored on the jobs it runs (BullMQ's `name`). */
  readonly name?: string;
  /**
   * Where the worker logs its start, retries, recoveries from dead workers, dead letters and the
   * monitor's figures: pass the receiver's pino or console. Its own option, since the receiver's
   * `logger` is typed for delivery records (each run's delivery record still goes there).
   */
  readonly logger?: InboxLogger;
}

/**
 * A running inbox worker.
 *
 * @example
 * ```ts
 * const worker = startInboxWorker(webhooks, { connection: process.env.REDIS_URL! });
 * process.once('SIGTERM', () => void worker.close());
 * ```
 */
export interface InboxWorker {
  /** The BullMQ worker (for its events; pause/resume). */
  readonly worker: Worker<InboxJobData, ProcessResult, InboxJobName>;
  /** The inbox queue, on the worker's connection. */
  readonly queue: InboxBullQueue;
  /** Resolves once connected to Redis and fetching events. */
  waitUntilReady(): Promise<void>;
  /** The inbox's figures now. */
  stats(): Promise<InboxStats>;
  /**
   * Stop taking events, wait for the running handlers to settle (each at most `handlerTimeoutMs`),
   * and close the connections the worker made. `force` does not wait: the running events are then
   * run again elsewhere once their lock and lease end, as after a crash.
   */
  close(force?: boolean): Promise<void>;
}

/** Why an attempt failed, as BullMQ records it (`failedReason`, the stack) and the core's error. */
class AttemptFailedError extends Error {
  override name = 'AttemptFailedError';
  constructor(error: unknown) {
    const { message, stack } = describeFailure(error);
    super(message, { cause: error });
    if (stack !== undefined) this.stack = stack;
  }
}

/**
 * The last attempt's failure: unrecoverable for BullMQ, which then moves the job to the failed set
 * (the dead-letter list) instead of retrying it.
 */
class LastAttemptFailedError extends UnrecoverableError {
  constructor(error: unknown) {
    const { message, stack } = describeFailure(error);
    super(message);
    // BullMQ recognises the error by class or by this name; keep both.
    this.name = 'UnrecoverableError';
    this.cause = error;
    if (stack !== undefined) this.stack = stack;
  }
}

/** The worker needs a client BullMQ can block on: its retries per request must be unlimited. */
function checkBlockingClient(connection: InboxConnection, what: string): void {
  if (typeof connection === 'string') return;
  const options = (connection as { options?: { maxRetriesPerRequest?: unknown; redisOptions?: object } })
    .options;
  const retries =
    (options?.redisOptions as { maxRetriesPerRequest?: unknown } | undefined)?.maxRetriesPerRequest ??
    options?.maxRetriesPerRequest;
  if (retries !== null && retries !== undefined) {
    throw new ConfigurationError(
      `${what} needs a client made with { maxRetriesPerRequest: null } (BullMQ's workers block on Redis and must retry forever); this one has ${String(retries)}. Pass a redis:// URL, or a client of its own, not the door's fail-fast one.`,
    );
  }
}

/**
 * Run the handlers of queued events: each job of the inbox goes through `webhooks.process` (claim in
 * the idempotency store, handlers with `ctx.attempt`, `ctx.receivedAt` and `ctx.signal`, completion),
 * so that however often BullMQ delivers it (a worker killed mid-handler, a stalled job, a second write
 * by the door) its handlers complete once. A failed attempt is retried on `backoff` until `attempts`;
 * the last failure moves the event to the dead-letter list (BullMQ's failed set) and reports
 * `EventDeadLetteredError` to `onError`. Start as many as you like, in this process or others.
 *
 * With the receiver's `telemetry` option (`openTelemetry()`), each run is a span in the trace of the
 * delivery the door queued, each dead letter is counted (`webhook.inbox.runs`, outcome
 * `dead_lettered`), and the inbox's depth, oldest wait and dead letters are gauges, read from Redis
 * when the plug-in collects; `close()` stops that.
 *
 * @example
 * ```ts
 * import { createWebhooks } from 'service-webhooks';
 * import { startInboxWorker } from 'service-webhooks/bullmq';
 * import { RedisStore } from 'service-webhooks/redis';
 *
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: new RedisStore({ client }) });
 * webhooks.on('payment.succeeded', async (event, ctx) => {
 *   await ledger.record(event.data, { signal: ctx.signal }); // ctx.attempt, ctx.receivedAt
 * });
 * const worker = startInboxWorker(webhooks, { connection: process.env.REDIS_URL!, concurrency: 20 });
 * process.once('SIGTERM', () => void worker.close());
 * ```
 */
export function startInboxWorker(webhooks: Webhooks, options: InboxWorkerOptions): InboxWorker {
  return new RunningInboxWorker(webhooks, options, resolveWorkerOptions(webhooks, options));
}

const WHAT = 'startInboxWorker()';

/** {@link InboxWorkerOptions} checked and with their defaults filled in, once, before anything starts. */
interface WorkerSettings {
  readonly queueName: string;
  readonly prefix: ReturnType<typeof location>['prefix'];
  readonly concurrency: number;
  readonly attempts: number;
  readonly retries: Schedule;
  readonly handlerTimeoutMs: number | undefined;
  readonly acceptUnsealedEntries: boolean;
  readonly lockDuration: number;
  readonly stalledInterval: number;
  readonly maxStalledCount: number;
  readonly keepCompleted: number;
  readonly closeTimeoutMs: number;
  /** `undefined`: `monitor: false`. */
  readonly monitor: Required<InboxMonitorOptions> | undefined;
  /** The receiver's `telemetry` plug-in: the worker's dead letters and gauges go where its runs go. */
  readonly telemetry: WebhookTelemetry | undefined;
}

/** Throws ConfigurationError for the first option that is wrong, in the order they are listed here. */
function resolveWorkerOptions(webhooks: Webhooks, options: InboxWorkerOptions): WorkerSettings {
  checkReceiver(webhooks, WHAT);
  const { queueName, prefix } = location(options ?? {}, DEFAULT_QUEUE_NAME, WHAT);
  const concurrency = wholeOption(WHAT, 'concurrency', options.concurrency, 10);
  const attempts = wholeOption(WHAT, 'attempts', options.attempts, INBOX_DEFAULTS.attempts);
  const retries = schedule(options.backoff, WHAT);
  const handlerTimeoutMs =
    options.handlerTimeoutMs === undefined
      ? undefined
      : wholeOption(WHAT, 'handlerTimeoutMs', options.handlerTimeoutMs, 0);
  const lockDuration = wholeOption(WHAT, 'lockDurationMs', options.lockDurationMs, 30_000);
  const stalledInterval = wholeOption(WHAT, 'stalledIntervalMs', options.stalledIntervalMs, 30_000);
  const maxStalledCount = wholeOption(WHAT, 'maxStalledCount', options.maxStalledCount, 5, 0);
  const keepCompleted = wholeOption(WHAT, 'keepCompleted', options.keepCompleted, 1_000, 0);
  const closeTimeoutMs = wholeOption(WHAT, 'closeTimeoutMs', options.closeTimeoutMs, 10_000, 0);
  checkBlockingClient(options.connection, WHAT);
  const monitor = monitorSettings(WHAT, options.monitor);
  return {
    queueName,
    prefix,
    concurrency,
    attempts,
    retries,
    handlerTimeoutMs,
    acceptUnsealedEntries: acceptUnsealedOption(WHAT, options.acceptUnsealedEntries),
    lockDuration,
    stalledInterval,
    maxStalledCount,
    keepCompleted,
    closeTimeoutMs,
    monitor,
    telemetry: webhooks.telemetry,
  };
}

/**
 * The worker behind {@link startInboxWorker}: a BullMQ worker whose processor is {@link #process}, its
 * listeners, the eviction check and the monitor. The public members are arrow functions, so they keep
 * working when taken off the object (`const { close } = startInboxWorker(…)`).
 */
class RunningInboxWorker implements InboxWorker {
  readonly worker: Worker<InboxJobData, ProcessResult, InboxJobName>;
  readonly queue: InboxBullQueue;
  readonly #webhooks: Webhooks;
  readonly #settings: WorkerSettings;
  readonly #logger: InboxLogger | undefined;
  readonly #opened: OpenedClient;
  readonly #monitor: InboxMonitor | undefined;
  /** Stops the telemetry plug-in's collections from reading this worker's queue. */
  readonly #stopObserving: (() => void) | undefined;
  #lastConnectionWarning = 0;
  #closing: Promise<void> | undefined;
  /** The runs of the processor in flight: a graceful close waits for them before its clock starts. */
  readonly #running = new Set<Promise<unknown>>();

  constructor(webhooks: Webhooks, options: InboxWorkerOptions, settings: WorkerSettings) {
    this.#webhooks = webhooks;
    this.#settings = settings;
    this.#logger = options.logger;
    this.#opened = openClient(options.connection, { maxRetriesPerRequest: null }, WHAT);
    const { queueName, prefix, retries } = settings;
    this.worker = new Worker<InboxJobData, ProcessResult, InboxJobName>(
      queueName,
      // Three parameters: BullMQ passes its abort signal only to a processor whose `length` is 3 or more.
      (job, token, signal) => this.#track(this.#process(job, token, signal)),
      {
        connection: this.#opened.client,
        ...prefix,
        concurrency: settings.concurrency,
        lockDuration: settings.lockDuration,
        stalledInterval: settings.stalledInterval,
        maxStalledCount: settings.maxStalledCount,
        removeOnComplete: { count: settings.keepCompleted },
        settings: { backoffStrategy: (failedAttempts: number) => retries.delayMs(failedAttempts) },
        ...(options.name === undefined ? {} : { name: options.name }),
      },
    );
    this.queue = new Queue<InboxJobData, unknown, InboxJobName>(queueName, {
      connection: this.#opened.client,
      ...prefix,
    });

    this.worker.on('failed', (job, error) => this.#onFailed(job, error));
    this.worker.on('stalled', (jobId) => this.#onStalled(jobId));
    this.worker.on('error', (error) => this.#onConnectionError(error));
    this.queue.on('error', (error) => this.#onConnectionError(error));
    this.#checkEviction();

    this.#monitor =
      settings.monitor &&
      new InboxMonitor(webhooks, queueName, () => inboxStats(this.queue), settings.monitor, this.#logger);
    // Read when the plug-in collects, so a worker without an exporter costs Redis nothing.
    this.#stopObserving = settings.telemetry?.observeInbox(this.#gauges);
    const { concurrency, attempts } = settings;
    this.#log(
      'info',
      { concurrency, attempts, retrySpanMs: retries.spanMs(attempts) },
      `webhook inbox worker started: ${attempts} attempts over about ${formatDuration(retries.spanMs(attempts))}`,
    );
  }

  readonly waitUntilReady = async (): Promise<void> => {
    await this.worker.waitUntilReady();
    await this.queue.waitUntilReady();
  };

  readonly stats = (): Promise<InboxStats> => inboxStats(this.queue);

  readonly close = (force = false): Promise<void> => {
    this.#closing ??= (async () => {
      this.#monitor?.stop();
      // Before the queue closes: a collection after it would read a closed connection.
      this.#stopObserving?.();
      const closed = (async () => {
        await this.worker.close(force);
        await this.queue.close();
        await this.#opened.close();
      })();
      // The bound: the running handlers settle within their budget, then BullMQ has closeTimeoutMs.
      const { closeTimeoutMs } = this.#settings;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const settled = force ? Promise.resolve() : Promise.allSettled([...this.#running]);
      const late = settled.then(
        () => new Promise<'late'>((resolve) => (timer = setTimeout(resolve, closeTimeoutMs, 'late'))),
      );
      const outcome = await Promise.race([closed.then(() => 'closed' as const), late]).finally(() =>
        clearTimeout(timer),
      );
      if (outcome === 'closed') return;
      closed.catch(() => {});
      this.#log(
        'warn',
        { closeTimeoutMs },
        'webhook inbox: close took longer than closeTimeoutMs after the handlers settled (BullMQ waiting on Redis); its connections were dropped',
      );
      this.#cut();
    })();
    return this.#closing;
  };

  /** Drop every connection the worker made, now: BullMQ's own (the blocking one among them) and ours. */
  #cut(): void {
    for (const backend of [this.worker, this.queue]) {
      // BullMQ's disconnect waits for each connection's end; nothing here waits for it.
      backend.disconnect().catch(() => {});
    }
    this.#opened.cut();
  }

  #track<T>(run: Promise<T>): Promise<T> {
    this.#running.add(run);
    const settled = (): void => {
      this.#running.delete(run);
    };
    run.then(settled, settled);
    return run;
  }

  /** The inbox's gauges for the telemetry plug-in, from the figures `stats()` reads. */
  readonly #gauges = async (): Promise<InboxGauges> => {
    const stats = await inboxStats(this.queue);
    return {
      queue: this.#settings.queueName,
      depth: stats.depth,
      oldestAgeSeconds: (stats.oldestWaitingMs ?? 0) / 1000,
      deadLetters: stats.deadLettered,
    };
  };

  /** BullMQ's processor: one attempt at a queued event. */
  async #process(
    job: Job<InboxJobData, ProcessResult, InboxJobName>,
    token?: string,
    signal?: AbortSignal,
  ): Promise<ProcessResult> {
    const { attempts, handlerTimeoutMs, acceptUnsealedEntries } = this.#settings;
    const attempt = job.attemptsMade + 1;
    const run: { -readonly [K in keyof ProcessOptions]: ProcessOptions[K] } = { attempt };
    if (signal) run.signal = signal;
    if (handlerTimeoutMs !== undefined) run.handlerTimeoutMs = handlerTimeoutMs;
    if (job.data?.replay) run.replayId = job.data.replay.id;
    if (acceptUnsealedEntries) run.acceptUnsealed = true;
    try {
      return await this.#webhooks.process(entryOf(job.data), run);
    } catch (error) {
      if (isPoison(error)) {
        // A poison message (hand-made, or written by something else), or an event its schema refuses:
        // no retry can fix it, so it is dead-lettered now, with the reason, rather than spending every
        // attempt over days. A replay once the schema is fixed handles it.
        throw new LastAttemptFailedError(error);
      }
      if (error instanceof EventInProgressError && token !== undefined) {
        // Another run of this event holds its claim: a worker that is handling it now (a stalled job
        // BullMQ handed out again, a second write), or one that died and whose lease has not ended.
        // Not this event's failure, so no attempt is spent: come back once that lease is over, when
        // the event is either handled (this run is then a duplicate) or free to claim.
        const retryAfterSeconds = error.retryAfterSeconds ?? 5;
        const delayMs = Math.round(retryAfterSeconds * 1000 * (1 + 0.2 * Math.random()));
        await job.moveToDelayed(Date.now() + delayMs, token);
        this.#log(
          'info',
          { jobId: job.id, eventId: job.data.event.id, delayMs },
          'webhook inbox: event held by another worker; deferred',
        );
        throw new DelayedError();
      }
      // process() has reported the failure to onError already; BullMQ records it on the job.
      throw attempt >= attempts ? new LastAttemptFailedError(error) : new AttemptFailedError(error);
    }
  }

  /** An attempt failed: BullMQ retries it later, or, after the last, it is dead-lettered. */
  #onFailed(job: Job<InboxJobData, ProcessResult, InboxJobName> | undefined, error: Error): void {
    // `job` is missing only when a removeOnFail option dropped it: the worker sets none.
    if (!job) return;
    // A job someone wrote by hand may hold no event: it still fails and is dead-lettered, by job id.
    const event = job.data?.event as WebhookEvent | undefined;
    const eventId = typeof event?.id === 'string' ? event.id : `(job ${job.id})`;
    const cause = (error as { cause?: unknown }).cause ?? error;
    const record = {
      jobId: job.id,
      eventId,
      eventType: event?.type,
      attempt: job.attemptsMade,
      ...failureFields(cause),
    };
    if (job.finishedOn === undefined) {
      // BullMQ scheduled the next attempt.
      this.#log('warn', { ...record, nextAttemptInMs: job.delay }, 'webhook inbox: attempt failed; retrying');
      return;
    }
    this.#log('error', record, 'webhook inbox: event dead-lettered after its last attempt');
    this.#settings.telemetry?.deadLettered(typeof event?.type === 'string' ? event.type : undefined);
    this.#webhooks.report(new EventDeadLetteredError(eventId, job.attemptsMade, { cause }), event);
  }

  #onStalled(jobId: string): void {
    this.#log(
      'warn',
      { jobId },
      'webhook inbox: event abandoned by a worker that stopped (crash, blocked event loop); running it again',
    );
  }

  /** Connection trouble comes as `error` events, one per reconnection attempt: say it once a minute. */
  #onConnectionError(error: Error): void {
    const now = Date.now();
    if (now - this.#lastConnectionWarning < 60_000) return;
    this.#lastConnectionWarning = now;
    this.#log('warn', { err: error }, 'webhook inbox: Redis connection error (BullMQ reconnects by itself)');
  }

  /**
   * An evicting Redis loses queued events; the door refuses to queue on one, and the worker says so
   * (to onError and its log) rather than leave BullMQ's console warning as the only sign.
   */
  #checkEviction(): void {
    const eviction = new BackgroundErrors();
    eviction.listen((error) => {
      this.#log('error', { err: error }, 'webhook inbox: the queue’s Redis may evict jobs');
      this.#webhooks.report(error);
    });
    this.queue
      .waitUntilReady()
      .then(() => this.queue.getBackend().client)
      .then((client) =>
        new EvictionGuard(client as unknown as Redis | Cluster, WHAT, 'report', eviction).check(),
      )
      .catch(() => {
        // Not connected: the worker's own connection errors say so; nothing to check yet.
      });
  }

  #log(level: 'info' | 'warn' | 'error', record: Record<string, unknown>, message: string): void {
    inboxLog(this.#logger, level, { inbox: this.#settings.queueName, ...record }, message);
  }
}
