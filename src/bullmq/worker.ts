/**
 * The worker's side of the inbox: BullMQ workers that run each queued event through
 * `webhooks.process`, retry it on the receiver's own schedule, and dead-letter it after the last
 * attempt.
 */

import type { Worker } from 'bullmq';
import type { InboxStats } from 'service-webhooks/core';
import {
  type AnyWebhooks,
  ConfigurationError,
  type InboxBackoff,
  type InboxFlowOptions,
  type InboxLogger,
  type InboxMonitorOptions,
  type ProcessResult,
  type Webhooks,
} from 'service-webhooks/core';
import type { Schedule } from '../inbox/backoff.js';
import { InboxWorkerCore } from '../inbox/worker.js';
import { checkReceiver, flowSettings, wholeOption, workerSettings } from '../inbox/worker-options.js';
import { RedisFlowControl } from '../stores/redis-flow-control.js';
import {
  type InboxConnection,
  type InboxLocation,
  location,
  type OpenedClient,
  openClient,
} from './connection.js';
import type { InboxBullQueue } from './inbox-queue.js';
import { DEFAULT_QUEUE_NAME, type InboxJobData, type InboxJobName } from './job-data.js';
import { type BullDelivery, BullTransport } from './transport.js';

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
export interface InboxWorkerOptions extends InboxLocation, InboxFlowOptions {
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
export function startInboxWorker(webhooks: AnyWebhooks, options: InboxWorkerOptions): InboxWorker {
  checkReceiver(webhooks, WHAT);
  return new RunningInboxWorker(webhooks, options, resolveWorkerOptions(options));
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
}

/** Throws ConfigurationError for the first option that is wrong, in the order they are listed here. */
function resolveWorkerOptions(options: InboxWorkerOptions): WorkerSettings {
  const { queueName, prefix } = location(options ?? {}, DEFAULT_QUEUE_NAME, WHAT);
  const shared = workerSettings(WHAT, options);
  const lockDuration = wholeOption(WHAT, 'lockDurationMs', options.lockDurationMs, 30_000);
  const stalledInterval = wholeOption(WHAT, 'stalledIntervalMs', options.stalledIntervalMs, 30_000);
  const maxStalledCount = wholeOption(WHAT, 'maxStalledCount', options.maxStalledCount, 5, 0);
  const keepCompleted = wholeOption(WHAT, 'keepCompleted', options.keepCompleted, 1_000, 0);
  const closeTimeoutMs = wholeOption(WHAT, 'closeTimeoutMs', options.closeTimeoutMs, 10_000, 0);
  checkBlockingClient(options.connection, WHAT);
  return {
    ...shared,
    queueName,
    prefix,
    lockDuration,
    stalledInterval,
    maxStalledCount,
    keepCompleted,
    closeTimeoutMs,
  };
}

/**
 * The worker behind {@link startInboxWorker}: the shared inbox worker over a BullMQ transport.
 */
class RunningInboxWorker implements InboxWorker {
  readonly worker: Worker<InboxJobData, ProcessResult, InboxJobName>;
  readonly queue: InboxBullQueue;
  readonly #core: InboxWorkerCore<BullDelivery>;

  constructor(webhooks: Webhooks, options: InboxWorkerOptions, settings: WorkerSettings) {
    let opened: OpenedClient | undefined;
    const open = (): OpenedClient => {
      opened ??= openClient(options.connection, { maxRetriesPerRequest: null }, WHAT);
      return opened;
    };
    // Checked before anything connects; the shared state is the queue's own Redis, beside its keys.
    const flow = flowSettings(
      WHAT,
      settings.queueName,
      options,
      () =>
        new RedisFlowControl({
          client: open().client as never,
          prefix: `${settings.prefix.prefix ?? 'bull'}:${settings.queueName}:sw-flow:`,
        }),
    );
    const transport = new BullTransport({ ...settings, name: options.name, what: WHAT }, open());
    this.worker = transport.worker;
    this.queue = transport.queue;
    this.#core = new InboxWorkerCore(webhooks, transport, { ...settings, flow }, options.logger);
    transport.attach(this.#core, webhooks);
  }

  readonly waitUntilReady = async (): Promise<void> => {
    await this.worker.waitUntilReady();
    await this.queue.waitUntilReady();
  };

  readonly stats = (): Promise<InboxStats> => this.#core.stats();

  readonly close = (force = false): Promise<void> => this.#core.close(force);
}
