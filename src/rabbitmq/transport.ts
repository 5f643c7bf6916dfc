/**
 * RabbitMQ as an inbox transport: a consumer (`basic.consume`, prefetch = the worker's concurrency)
 * whose deliveries the shared worker takes as a pull engine. An unacknowledged delivery is the lease:
 * the broker holds it for this channel until it is acknowledged or the channel closes, and then hands
 * it out again (a quorum queue counts that in `x-delivery-count`: the transport's `crashes`).
 *
 * Why retries and deferrals are copies: the attempt number travels with the message (`sw-attempt`,
 * sealed by the receiver in `sw-attempt-seal`), since the broker's delivery count also counts a worker
 * that died, which must spend no attempt. Only a failed attempt writes the next one: a copy with
 * `attempt + 1` and its earliest start (`sw-not-before`), published (confirmed) to the holding queue of
 * the longest delay step that fits; the original is acknowledged after. A deferral writes a copy of the
 * same attempt the same way. A copy whose holding queue let it out early is held back again by the
 * worker that receives it (`due`), spending nothing. A crash between the publish and the acknowledgement
 * leaves both: the store's claim runs the handlers once.
 *
 * A lost connection or channel (the broker restarted, a network cut, the broker closing the channel on
 * an error) is opened again with backoff; what this worker held then is requeued by the broker and
 * handed out again. Runs still going on the lost channel finish, but their settling is refused (their
 * delivery tags died with the channel): their copies come back and find the event completed, or run
 * the same attempt again.
 */
import type { InboxStats } from 'service-webhooks/core';
import type { DeadLetter, EarlyCopies, InboxDelivery, InboxTransport } from '../inbox/transport.js';
import { Link, type Live, publishConfirmed } from './connection.js';
import {
  entryOf,
  type FailureRecord,
  headersOf,
  type MessageMeta,
  metaOf,
  type ReceivedMessage,
  receivedOf,
} from './message.js';
import { DELAY_STEPS_MS, declareQueues, firstStep, type InboxQueues } from './topology.js';

/**
 * A consumed message, as the shared worker runs it.
 *
 * @example
 * ```ts
 * const [delivery] = await transport.receive(1, signal); // delivery.meta.attempt, delivery.crashes
 * ```
 */
export interface RabbitMQDelivery extends InboxDelivery {
  readonly message: ReceivedMessage;
  readonly meta: MessageMeta;
  readonly crashes: number;
  /** The connection it came on: only there can it be acknowledged. */
  readonly live: Live;
  /** amqplib's message, which `ack` takes. */
  readonly raw: object;
}

/**
 * What the transport is made with, checked by `startRabbitMQWorker`.
 *
 * @example
 * ```ts
 * new RabbitMQTransport({ url, queues: queuesOf('webhooks'), prefetch: 10, confirmTimeoutMs: 5_000, warn, info });
 * ```
 */
export interface RabbitMQTransportSettings {
  readonly url: string;
  readonly queues: InboxQueues;
  /** Deliveries the broker hands this worker at once: the worker's concurrency. */
  readonly prefetch: number;
  readonly confirmTimeoutMs: number;
  readonly connectionName?: string | undefined;
  /** The first wait before opening a lost connection again (doubling to 30 s, with jitter). @default 250 */
  readonly reconnectDelayMs?: number;
  readonly warn: (record: Record<string, unknown>, message: string) => void;
  readonly info: (record: Record<string, unknown>, message: string) => void;
}

/** The longest wait between two attempts to open a lost connection. */
const MAX_RECONNECT_DELAY_MS = 30_000;

/**
 * The transport behind `startRabbitMQWorker`.
 *
 * @example
 * ```ts
 * const core = new InboxWorkerCore(webhooks, new RabbitMQTransport(settings), workerSettings, logger);
 * ```
 */
export class RabbitMQTransport implements InboxTransport<RabbitMQDelivery> {
  readonly name: string;
  readonly redelivery = 'RabbitMQ hands the message out again once this worker’s channel closes';
  readonly receiveTrouble = 'webhook inbox: cannot receive from RabbitMQ; retrying';
  readonly attemptTravels = true;
  readonly ready: Promise<void>;
  readonly #settings: RabbitMQTransportSettings;
  readonly #link: Link;
  /** Deliveries consumed and not yet taken by the worker. */
  #buffer: RabbitMQDelivery[] = [];
  /** Deliveries taken by the worker and not yet settled: this worker's `active`. */
  #held = 0;
  #wake: (() => void) | undefined;
  #consumerTag: string | undefined;
  #closing = false;
  #reconnecting: Promise<void> | undefined;

  constructor(settings: RabbitMQTransportSettings) {
    this.#settings = settings;
    this.name = settings.queues.queue;
    this.#link = new Link(settings.url, {
      connectTimeoutMs: settings.confirmTimeoutMs,
      connectionName: settings.connectionName,
      setup: async (channel) => {
        await declareQueues(channel, settings.queues, true);
        await channel.prefetch(settings.prefetch);
      },
      onLost: (live, error) => this.#lost(live, error),
    });
    this.ready = this.#consume();
  }

  /** The inbox's figures: the broker's ready counts, and this worker's own running deliveries. */
  readonly stats = async (): Promise<InboxStats> => {
    const live = await this.#link.open();
    const counts = await declareQueues(live.channel, this.#settings.queues, true);
    const active = this.#held + this.#buffer.length;
    return {
      waiting: counts.waiting,
      active,
      delayed: counts.delayed,
      depth: counts.waiting + active + counts.delayed,
      deadLettered: counts.deadLettered,
      oldestWaitingMs: undefined,
    };
  };

  async receive(max: number, signal: AbortSignal): Promise<RabbitMQDelivery[]> {
    while (this.#buffer.length === 0 && !signal.aborted) {
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          signal.removeEventListener('abort', wake);
          if (this.#wake === wake) this.#wake = undefined;
          resolve();
        };
        this.#wake = wake;
        signal.addEventListener('abort', wake, { once: true });
      });
    }
    if (signal.aborted) return [];
    const taken = this.#buffer.splice(0, max);
    this.#held += taken.length;
    return taken;
  }

  /**
   * A copy its holding queue let out before its time goes back through the holding queues for what
   * remains (the same attempt, nothing spent); one due within the shortest step waits in the worker.
   */
  readonly earlyCopies: EarlyCopies<RabbitMQDelivery> = {
    notBefore: (delivery) => delivery.meta.notBefore,
    holdBackFromMs: DELAY_STEPS_MS[0]!,
    holdBack: (delivery, earlyMs) =>
      this.#settle(delivery, this.#copy(delivery, { notBefore: delivery.meta.notBefore }), earlyMs),
  };

  async acknowledge(delivery: RabbitMQDelivery): Promise<void> {
    await this.#settle(delivery);
  }

  async defer(delivery: RabbitMQDelivery, delayMs: number): Promise<void> {
    await this.#settle(delivery, this.#copy(delivery, { notBefore: Date.now() + delayMs }), delayMs);
  }

  async retry(
    delivery: RabbitMQDelivery,
    next: { attempt: number; delayMs: number; attemptSeal: string | undefined },
  ): Promise<void> {
    const meta = this.#copy(delivery, {
      attempt: next.attempt,
      attemptSeal: next.attemptSeal,
      notBefore: Date.now() + next.delayMs,
    });
    await this.#settle(delivery, meta, next.delayMs);
  }

  async deadLetter(delivery: RabbitMQDelivery, dead: DeadLetter): Promise<void> {
    const failure: FailureRecord = {
      reason: dead.reason,
      attempts: dead.attempt,
      lastError: dead.message,
      stack: dead.stack ?? '',
      failedAt: Date.now(),
      lastAttemptAt: dead.startedAt,
    };
    await this.#settle(
      delivery,
      this.#copy(delivery, { notBefore: undefined, failure }),
      0,
      this.#settings.queues.deadLetters,
    );
  }

  async close(force: boolean, settled: Promise<unknown>): Promise<void> {
    this.#closing = true;
    this.#wake?.();
    const live = await this.#link.current();
    if (live && this.#consumerTag !== undefined) {
      await live.channel.cancel(this.#consumerTag).catch(() => {});
    }
    // Consumed but never started: handed back at once rather than held until the channel closes.
    const unstarted = this.#buffer.splice(0);
    for (const delivery of unstarted) {
      if (!delivery.live.closed) {
        try {
          delivery.live.channel.nack(delivery.raw as never, false, true);
        } catch {
          // The channel went meanwhile: the broker requeued it already.
        }
      }
    }
    if (!force) await settled;
    await this.#link.close(!force);
  }

  /** The metadata of a copy of `delivery` with `changes`: the crashes it has seen ride along. */
  #copy(delivery: RabbitMQDelivery, changes: Partial<MessageMeta>): MessageMeta {
    return { ...delivery.meta, failure: undefined, ...changes, crashes: delivery.crashes };
  }

  /**
   * Settle `delivery`: with `meta`, first publish its copy (to `queue`, or to the holding queue for
   * `delayMs`), confirmed; then acknowledge it, on the channel it came on. Refused when that channel
   * is gone: the broker requeued the delivery already, and a copy now would be a second one.
   */
  async #settle(delivery: RabbitMQDelivery, meta?: MessageMeta, delayMs = 0, queue?: string): Promise<void> {
    const { live } = delivery;
    try {
      if (live.closed) throw new Error('the channel this event came on closed; RabbitMQ requeued it');
      if (meta) {
        const step = queue === undefined ? firstStep(delayMs) : undefined;
        const target =
          queue ?? (step === undefined ? this.#settings.queues.queue : this.#settings.queues.delay(step));
        await publishConfirmed(
          live,
          target,
          { body: delivery.message.body, headers: headersOf(meta) },
          this.#settings.confirmTimeoutMs,
        );
      }
      if (live.closed) throw new Error('the channel this event came on closed; RabbitMQ requeued it');
      live.channel.ack(delivery.raw as never);
    } finally {
      this.#held = Math.max(0, this.#held - 1);
    }
  }

  /** Open the connection (declaring the queues) and consume; resolves once consuming. */
  async #consume(): Promise<void> {
    const live = await this.#link.open();
    const { consumerTag } = await live.channel.consume(
      this.#settings.queues.queue,
      (message) => {
        if (message === null) {
          // The broker cancelled the consumer (the queue was deleted): the connection is dropped,
          // and the reconnection declares the queues again.
          if (!this.#closing) live.connection.close().catch(() => {});
          return;
        }
        this.#buffer.push(deliveryOf(message, live));
        this.#wake?.();
      },
      { noAck: false },
    );
    this.#consumerTag = consumerTag;
  }

  /** The connection went: drop what it had handed out (the broker requeued it) and open a new one. */
  #lost(live: Live, error: unknown): void {
    this.#buffer = this.#buffer.filter((delivery) => delivery.live !== live);
    if (this.#closing || this.#reconnecting) return;
    this.#settings.warn(
      { err: error, connection: live.generation },
      'webhook inbox: lost the connection to RabbitMQ; reconnecting (what it held is handed out again)',
    );
    this.#reconnecting = this.#reconnect().finally(() => {
      this.#reconnecting = undefined;
    });
  }

  async #reconnect(): Promise<void> {
    let delayMs = this.#settings.reconnectDelayMs ?? 250;
    for (let tries = 1; !this.#closing; tries++) {
      await new Promise((resolve) => setTimeout(resolve, delayMs * (0.5 + Math.random() / 2)));
      if (this.#closing) return;
      try {
        await this.#consume();
        this.#settings.info({ tries }, 'webhook inbox: reconnected to RabbitMQ');
        return;
      } catch (error) {
        if (tries === 1 || tries % 10 === 0) {
          this.#settings.warn({ err: error, tries }, 'webhook inbox: cannot reach RabbitMQ; retrying');
        }
        delayMs = Math.min(MAX_RECONNECT_DELAY_MS, delayMs * 2);
      }
    }
  }
}

function deliveryOf(
  message: Parameters<typeof receivedOf>[0] & { readonly fields: { readonly deliveryTag: number } },
  live: Live,
): RabbitMQDelivery {
  const received = receivedOf(message);
  const meta = metaOf(received);
  const name = received.messageId || `#${live.generation}.${message.fields.deliveryTag}`;
  return {
    message: received,
    meta,
    live,
    raw: message,
    entry: entryOf(received),
    attempt: meta.attempt,
    replayId: meta.replay?.id,
    ids: { messageId: name },
    unnamed: `(message ${name})`,
    crashes: (meta.crashes ?? 0) + received.deliveryCount,
    recovered: received.deliveryCount > 0,
  };
}
