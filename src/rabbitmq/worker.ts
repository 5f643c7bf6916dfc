/**
 * The worker's side of the RabbitMQ inbox: a consumer that runs each queued event through
 * `webhooks.process`, retries it on the receiver's own schedule through the holding queues, and
 * dead-letters it after the last attempt; it opens a lost connection again by itself.
 */
import type {
  AnyWebhooks,
  InboxBackoff,
  InboxFlowOptions,
  InboxLogger,
  InboxMonitorOptions,
  InboxStats,
} from 'service-webhooks/core';
import { inboxLog } from '../inbox/log.js';
import { InboxWorkerCore } from '../inbox/worker.js';
import { checkReceiver, flowSettings, wholeOption, workerSettings } from '../inbox/worker-options.js';
import { checkQueueName, checkUrl, queuesOf } from './topology.js';
import { type RabbitMQDelivery, RabbitMQTransport } from './transport.js';

/**
 * Options of {@link startRabbitMQWorker}.
 *
 * @example
 * ```ts
 * startRabbitMQWorker(webhooks, { url: process.env.AMQP_URL!, concurrency: 20, attempts: 30 });
 * ```
 */
export interface RabbitMQWorkerOptions extends InboxFlowOptions {
  /** The broker's `amqp://` or `amqps://` URL; the worker opens its own connection. */
  readonly url: string;
  /** The inbox queue (the door's). @default 'service-webhooks-inbox' */
  readonly queue?: string;
  /** Events this worker runs at once: the consumer's prefetch. @default 10 */
  readonly concurrency?: number;
  /**
   * Attempts before an event is dead-lettered, the first included. A deferral (the event held by
   * another run) and a worker's crash spend none.
   * @default 25
   */
  readonly attempts?: number;
  /** The delays between attempts. @default INBOX_DEFAULTS.backoff */
  readonly backoff?: InboxBackoff;
  /**
   * Budget of one attempt's handlers. Keep it, and the receiver's, well under the broker's
   * `consumer_timeout` (30 minutes by default): past it RabbitMQ closes the channel of a delivery not
   * yet acknowledged, and the event runs again elsewhere. @default the receiver's
   */
  readonly handlerTimeoutMs?: number;
  /**
   * Run entries that carry no seal, as doors before seals wrote them: only while the entries queued
   * before the upgrade drain (see the inbox docs' "Upgrading to sealed entries"); without it such an
   * entry is dead-lettered at once as `unauthenticated_inbox_entry`. An entry whose seal is present
   * but does not hold is refused either way.
   * @default false
   */
  readonly acceptUnsealedEntries?: boolean;
  /**
   * Times an event may come back unacknowledged (its worker died, or its connection was lost while it
   * ran or waited in the prefetch) before it is dead-lettered: an event that crashes every worker that
   * runs it must not take them down forever.
   * @default 10
   */
  readonly maxCrashes?: number;
  /** How long a publish (a retry's copy, a dead letter) waits for the broker's confirm. @default 5_000 */
  readonly confirmTimeoutMs?: number;
  /** The first wait before opening a lost connection again, doubling to 30 s. @default 250 */
  readonly reconnectDelayMs?: number;
  /** The connection's name in `rabbitmqctl list_connections` and the management UI. @default 'service-webhooks worker' */
  readonly connectionName?: string;
  /** Read, log and check the inbox's figures; `false` turns it off. @default { intervalMs: 60_000 } */
  readonly monitor?: InboxMonitorOptions | false;
  /** Where the worker logs retries, deferrals, dead letters, recoveries and connection trouble. */
  readonly logger?: InboxLogger;
}

/**
 * A running RabbitMQ worker.
 *
 * @example
 * ```ts
 * const worker = startRabbitMQWorker(webhooks, { url });
 * await worker.waitUntilReady();
 * process.once('SIGTERM', () => void worker.close());
 * ```
 */
export interface RabbitMQWorker {
  /** The inbox queue it consumes. */
  readonly queue: string;
  /** Resolves once the queues are declared and the worker consumes; rejects when it cannot start. */
  waitUntilReady(): Promise<void>;
  /** The inbox's figures now (`active`: this worker's own deliveries; see `rabbitMQInboxStats`). */
  stats(): Promise<InboxStats>;
  /** Deliveries whose handlers run now. */
  readonly running: number;
  /**
   * Stop consuming, wait for the running handlers to settle (each at most `handlerTimeoutMs`) and
   * their messages to be settled, then close the connection. `force`: close it at once, settling
   * nothing: the broker hands the running events out again, as after a crash.
   */
  close(force?: boolean): Promise<void>;
}

const WHAT = 'startRabbitMQWorker()';

/**
 * Run the handlers of the events a RabbitMQ inbox holds: each message goes through `webhooks.process`
 * (claim, handlers with `ctx.attempt`, completion), so however often the broker hands it out (a worker
 * killed mid-handler, a connection lost, two copies from the door) its handlers complete once. Failed
 * attempts are retried on `backoff` until `attempts`, through the inbox's holding queues; the last
 * failure, a poison entry or an unauthenticated one (at once) goes to `<queue>.dead-letters` with its
 * cause and reports `EventDeadLetteredError` to `onError`.
 *
 * @example
 * ```ts
 * import { createWebhooks } from 'service-webhooks';
 * import { startRabbitMQWorker } from 'service-webhooks/rabbitmq';
 *
 * const webhooks = createWebhooks({ secret, store });
 * webhooks.on('payment.succeeded', async (event, ctx) => ledger.record(event.data, { signal: ctx.signal }));
 * const worker = startRabbitMQWorker(webhooks, { url: process.env.AMQP_URL!, concurrency: 20 });
 * process.once('SIGTERM', () => void worker.close());
 * ```
 */
export function startRabbitMQWorker(webhooks: AnyWebhooks, options: RabbitMQWorkerOptions): RabbitMQWorker {
  checkReceiver(webhooks, WHAT);
  const url = checkUrl(options?.url, WHAT);
  const queue = checkQueueName(options.queue, WHAT);
  const settings = {
    // A channel's prefetch (the concurrency) is a 16-bit count in AMQP.
    ...workerSettings(WHAT, options, 65_535),
    maxCrashes: wholeOption(WHAT, 'maxCrashes', options.maxCrashes, 10, 0),
    // RabbitMQ keeps no state workers could share for this: `flowControl` names where (a Redis or
    // PostgreSQL), as for SQS.
    flow: flowSettings(WHAT, queue, options, undefined),
  };
  const { logger } = options;
  const transport = new RabbitMQTransport({
    url,
    queues: queuesOf(queue),
    prefetch: settings.concurrency,
    confirmTimeoutMs: wholeOption(WHAT, 'confirmTimeoutMs', options.confirmTimeoutMs, 5_000, 1),
    reconnectDelayMs: wholeOption(WHAT, 'reconnectDelayMs', options.reconnectDelayMs, 250, 1),
    connectionName: options.connectionName ?? 'service-webhooks worker',
    warn: (record, message) => inboxLog(logger, 'warn', { inbox: queue, ...record }, message),
    info: (record, message) => inboxLog(logger, 'info', { inbox: queue, ...record }, message),
  });
  return new RunningRabbitMQWorker(queue, new InboxWorkerCore(webhooks, transport, settings, logger));
}

/** The worker behind {@link startRabbitMQWorker}: the shared inbox worker over a RabbitMQ transport. */
class RunningRabbitMQWorker implements RabbitMQWorker {
  readonly queue: string;
  readonly #core: InboxWorkerCore<RabbitMQDelivery>;

  constructor(queue: string, core: InboxWorkerCore<RabbitMQDelivery>) {
    this.queue = queue;
    this.#core = core;
  }

  get running(): number {
    return this.#core.running;
  }

  readonly waitUntilReady = (): Promise<void> => this.#core.ready;

  readonly stats = (): Promise<InboxStats> => this.#core.stats();

  readonly close = (force = false): Promise<void> => this.#core.close(force);
}
