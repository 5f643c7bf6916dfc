/**
 * The worker's side of the inbox on pg-boss: a fetch loop that runs each queued event through
 * `webhooks.process`, retries it on the receiver's own schedule, and dead-letters it after the last
 * attempt.
 */

import type { InboxStats } from 'service-webhooks/core';
import {
  type AnyWebhooks,
  ConfigurationError,
  type InboxBackoff,
  type InboxFlowOptions,
  type InboxLogger,
  type InboxMonitorOptions,
  type Webhooks,
} from 'service-webhooks/core';
import type { Schedule } from '../inbox/backoff.js';
import type { FlowSettings } from '../inbox/flow-gate.js';
import { InboxWorkerCore } from '../inbox/worker.js';
import { checkReceiver, flowSettings, wholeOption, workerSettings } from '../inbox/worker-options.js';
import { PostgresFlowControl } from '../stores/postgres-flow-control.js';
import { checkBoss, checkQueueName, ensureQueues, type PgBossLike } from './job.js';
import { checkSchema } from './stats.js';
import { type PgBossDelivery, PgBossTransport } from './transport.js';

/**
 * Options of {@link startPgBossWorker}.
 *
 * @example
 * ```ts
 * startPgBossWorker(webhooks, { boss, concurrency: 20, attempts: 30, backoff: { initialDelayMs: 30_000 } });
 * ```
 */
export interface PgBossWorkerOptions extends InboxFlowOptions {
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
  readonly flow: FlowSettings | undefined;
}

function resolve(options: PgBossWorkerOptions): WorkerSettings {
  const boss = checkBoss(options?.boss, WHAT);
  const shared = workerSettings(WHAT, options);
  const { handlerTimeoutMs } = shared;
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
    ...shared,
    expireInSeconds,
    maxCrashes: wholeOption(WHAT, 'maxCrashes', options.maxCrashes, 5, 0),
    pollIntervalMs: wholeOption(WHAT, 'pollIntervalMs', options.pollIntervalMs, 500, 10),
    // The shared state is pg-boss's own database (a table of its own, beside pg-boss's schema).
    flow: flowSettings(WHAT, checkQueueName(options.queue, WHAT), options, () => {
      const db = boss.getDb();
      return new PostgresFlowControl({
        pool: { query: (text, values) => db.executeSql(text, values) as never },
      });
    }),
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
  webhooks: AnyWebhooks,
  options: PgBossWorkerOptions,
): Promise<PgBossWorker> {
  checkReceiver(webhooks, WHAT);
  const settings = resolve(options);
  // The worker's settings are the queue's: jobs the door writes from now on take them.
  await ensureQueues(
    settings.boss,
    settings.queue,
    { expireInSeconds: settings.expireInSeconds, maxCrashes: settings.maxCrashes },
    true,
  );
  return new RunningPgBossWorker(webhooks, settings, options.logger);
}

/** The worker behind {@link startPgBossWorker}: the shared inbox worker over a pg-boss transport. */
class RunningPgBossWorker implements PgBossWorker {
  readonly queue: string;
  readonly #core: InboxWorkerCore<PgBossDelivery>;

  constructor(webhooks: Webhooks, settings: WorkerSettings, logger: InboxLogger | undefined) {
    this.queue = settings.queue;
    this.#core = new InboxWorkerCore(webhooks, new PgBossTransport(settings), settings, logger);
  }

  readonly stats = (): Promise<InboxStats> => this.#core.stats();

  readonly close = (force = false): Promise<void> => this.#core.close(force);
}
