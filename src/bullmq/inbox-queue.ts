/**
 * The door's side of the inbox: an `InboxQueue` that writes each verified, deduplicated event to a
 * BullMQ queue and fulfils once Redis acknowledged the write.
 */
import { Queue } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import type { BackgroundErrorListener, InboxEntry, InboxQueue } from 'service-webhooks/core';
import { ConfigurationError } from 'service-webhooks/core';
import { BackgroundErrors } from '../stores/background-errors.js';
import { EvictionGuard, type EvictionPolicyMode, evictionPolicyMode } from '../stores/redis-eviction.js';
import { type InboxConnection, type InboxLocation, isLive, location, openClient } from './connection.js';
import {
  DEFAULT_QUEUE_NAME,
  eventJobId,
  type InboxJobData,
  type InboxJobName,
  jobData,
  jobOptions,
} from './job-data.js';

/**
 * The BullMQ queue of an inbox, as the door, the worker and the dead-letter tools type it.
 *
 * @example
 * ```ts
 * const queue: InboxBullQueue = new Queue('service-webhooks-inbox', { connection: redis });
 * ```
 */
export type InboxBullQueue = Queue<InboxJobData, unknown, InboxJobName>;

/**
 * Options of {@link bullmqInbox}: `connection` (the inbox makes its queue) or `queue` (yours).
 *
 * @example
 * ```ts
 * bullmqInbox({ connection: process.env.REDIS_URL!, queueName: 'billing-webhooks' });
 * ```
 */
export type BullmqInboxOptions = InboxLocation & {
  /**
   * How long an event waits for the queue's first connection to Redis (a process that receives a
   * delivery as it starts) before it is refused with 503. Once connected, nothing waits: while Redis
   * is unreachable every event is refused at once.
   * @default 1_000
   */
  readonly readyTimeoutMs?: number;
  /**
   * What to do when the queue's Redis may evict keys (`maxmemory` with a `maxmemory-policy` other than
   * `noeviction`): an evicted job is an event the sender was told is safe and that never runs.
   * `'refuse'`: every event is answered 503 `inbox_unavailable` (the sender keeps it) and a
   * `ConfigurationError` naming the policy is reported to `onError`, until the policy is `noeviction`.
   * `'report'`: reported once, and events are queued regardless. Checked on the first event and at
   * most once a minute after.
   * @default 'refuse'
   */
  readonly evictionPolicy?: EvictionPolicyMode;
} & (
    | {
        /**
         * Redis. From a URL the inbox makes a client that fails fast (`enableOfflineQueue: false`,
         * `maxRetriesPerRequest: 1`, `commandTimeout: 1_000`), so that a delivery during an outage is
         * answered 503 at once. A client of yours should be made with the same options: the inbox
         * refuses events while it is not connected either way, but a write already sent when the
         * connection dropped waits as long as your client lets it.
         */
        readonly connection: InboxConnection;
        readonly queue?: undefined;
      }
    | {
        /** A BullMQ `Queue` you made and own (its name and prefix are used; `close()` leaves it open). */
        readonly queue: Queue;
        readonly connection?: undefined;
      }
  );

/**
 * The door's inbox: pass it to `createWebhooks({ inbox })`.
 *
 * @example
 * ```ts
 * const inbox = bullmqInbox({ connection: process.env.REDIS_URL! });
 * const webhooks = createWebhooks({ secret, store, inbox });
 * process.once('SIGTERM', () => void inbox.close());
 * ```
 */
export interface BullmqInbox extends InboxQueue {
  /** The BullMQ queue events are written to. */
  readonly queue: InboxBullQueue;
  /** Close the queue and the client the inbox made (an application's client or queue stays open). */
  close(): Promise<void>;
}

/** The options of the client the door makes from a URL: fail fast rather than queue. */
const DOOR_CLIENT = { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 1_000 } as const;

/**
 * An inbox on BullMQ for `createWebhooks({ inbox })`. Each event becomes one job whose id is the
 * event's dedup key (so a second write of one event, after a first that timed out but landed, adds
 * nothing) and whose data is the `InboxEntry`; `enqueue` fulfils once Redis has run the write, and
 * rejects at once when Redis is unreachable, so the sender is answered 503 and retries. How durable
 * an acknowledged event is, is Redis's persistence: run it with `appendonly yes` (and
 * `appendfsync always` to lose nothing a crash of Redis could take).
 *
 * @example
 * ```ts
 * import { createWebhooks } from 'service-webhooks';
 * import { bullmqInbox } from 'service-webhooks/bullmq';
 * import { RedisStore } from 'service-webhooks/redis';
 *
 * const inbox = bullmqInbox({ connection: process.env.REDIS_URL! });
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: new RedisStore({ client }), inbox });
 * ```
 */
export function bullmqInbox(options: BullmqInboxOptions): BullmqInbox {
  return new BullmqInboxQueue(options);
}

class BullmqInboxQueue implements BullmqInbox {
  readonly queue: InboxBullQueue;
  readonly #closeClient: () => Promise<void>;
  readonly #ownsQueue: boolean;
  readonly #readyTimeoutMs: number;
  /** The queue's client, once BullMQ finished connecting it; its status says whether to try a write. */
  #client: { readonly status?: string; readonly isCluster?: boolean } | undefined;
  /** The wait for the first connection, shared by the events that arrive during it. */
  #firstConnection: Promise<void> | undefined;
  readonly #backgroundErrors = new BackgroundErrors();
  readonly #evictionPolicy: EvictionPolicyMode;
  /** Made with the client, once BullMQ has connected it. */
  #eviction: EvictionGuard | undefined;

  constructor(options: BullmqInboxOptions) {
    const what = 'bullmqInbox()';
    const readyTimeoutMs = options?.readyTimeoutMs ?? 1_000;
    if (!Number.isFinite(readyTimeoutMs) || readyTimeoutMs <= 0) {
      throw new ConfigurationError(
        `${what} \`readyTimeoutMs\` must be a positive number of milliseconds; got ${String(readyTimeoutMs)}.`,
      );
    }
    this.#readyTimeoutMs = readyTimeoutMs;
    // Checked now, so that a typo fails at construction rather than on the first event.
    this.#evictionPolicy = evictionPolicyMode(options.evictionPolicy, what);
    if (options?.queue !== undefined) {
      if (!(options.queue instanceof Queue)) {
        throw new ConfigurationError(`${what} \`queue\` must be a BullMQ Queue.`);
      }
      this.queue = options.queue as InboxBullQueue;
      this.#ownsQueue = false;
      this.#closeClient = async () => {};
    } else {
      const { queueName, prefix } = location(options ?? {}, DEFAULT_QUEUE_NAME, what);
      const opened = openClient(options?.connection, DOOR_CLIENT, what);
      this.queue = new Queue<InboxJobData, unknown, InboxJobName>(queueName, {
        connection: opened.client,
        ...prefix,
      });
      this.#ownsQueue = true;
      this.#closeClient = opened.close;
    }
    // BullMQ emits connection errors on the queue; without a listener they would be printed per
    // reconnection attempt. Writes that fail reach onError as InboxUnavailableError with the cause.
    this.queue.on('error', () => {});
  }

  async enqueue(entry: InboxEntry, key: string): Promise<void> {
    const client = this.#client ?? (await this.#untilFirstConnection());
    // Once connected, a client that is not connected now is refused at once: a write handed to it
    // would wait in its offline queue (or fail there), and the sender is better told 503 straight away.
    if (!isLive(client)) throw new Error(`the inbox's Redis connection is ${client.status ?? 'down'}`);
    const evictionChecked = this.#eviction?.check();
    if (evictionChecked) await evictionChecked;
    await this.queue.add('event', jobData(entry), jobOptions(eventJobId(key)));
  }

  /** Called by the receiver: an unsafe eviction policy is reported through it. */
  onBackgroundError(listener: BackgroundErrorListener): void {
    this.#backgroundErrors.listen(listener);
  }

  async close(): Promise<void> {
    if (this.#ownsQueue) await this.queue.close();
    await this.#closeClient();
  }

  /**
   * The queue's client once BullMQ has connected it (and loaded its scripts), waited for at most
   * readyTimeoutMs: a process that receives a delivery as it starts queues it rather than refusing
   * it. One wait is shared by every event that arrives meanwhile, so nothing piles up.
   */
  #untilFirstConnection(): Promise<{ readonly status?: string; readonly isCluster?: boolean }> {
    this.#firstConnection ??= this.queue
      .waitUntilReady()
      .then(() => this.queue.getBackend().client)
      .then((client) => {
        this.#eviction = new EvictionGuard(
          // BullMQ types its connection as its own interface; it is the ioredis client it was given.
          client as unknown as Redis | Cluster,
          'bullmqInbox()',
          this.#evictionPolicy,
          this.#backgroundErrors,
        );
        this.#client = client as { readonly status?: string; readonly isCluster?: boolean };
      });
    // BullMQ gives a first connection up only when the client ended (closed, or its retryStrategy
    // stopped): the next event then asks again, and is refused as promptly.
    this.#firstConnection.catch(() => {
      this.#firstConnection = undefined;
    });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the inbox was not connected to Redis within ${this.#readyTimeoutMs} ms`)),
        this.#readyTimeoutMs,
      );
      timer.unref?.();
      this.#firstConnection!.then(
        () => {
          clearTimeout(timer);
          resolve(this.#client!);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });
  }
}
