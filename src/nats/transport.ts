/**
 * NATS JetStream as an inbox transport: a pull engine on one durable consumer that the workers share.
 * A delivery's `AckWait` is its lease, renewed while its handlers run by in-progress acknowledgements
 * (`working()`); an `ack` is the acknowledgement (the work-queue stream then drops the message); a
 * deferral is a `nak` with the delay; a retry is a copy; a dead letter is a copy in the dead-letter
 * stream with its cause in headers.
 *
 * Why a retry is a copy and not a `nak(delay)` of the message: JetStream's delivery count grows with
 * every delivery, a deferral's (another run holds the claim) and a crashed worker's too, so it cannot
 * be the attempt count, and a stored message cannot be changed. The attempt therefore travels in the
 * copy's headers (`Sw-Attempt`, sealed by the receiver in `Sw-Attempt-Seal`, so a changed one is
 * refused): a failed attempt publishes the next one (with `Sw-Not-Before`, its due time, and a
 * `Nats-Msg-Id` derived from the failed message, so a worker that crashes after publishing and runs
 * the message again adds nothing), then acknowledges the failed message. JetStream 2.9 has no delayed
 * publish: a copy is handed out at once, and a worker that receives it early `nak`s it for the time
 * left, which spends no attempt. A deferral `nak`s the message itself for the other run's lease.
 */
import type {
  Consumer,
  ConsumerMessages,
  JetStreamClient,
  JetStreamManager,
  JsMsg,
} from '@nats-io/jetstream';
import type { InboxStats } from 'service-webhooks/core';
import type { DeadLetter, EarlyCopies, InboxDelivery, InboxTransport } from '../inbox/transport.js';
import {
  copyMessageId,
  entryOf,
  headersOf,
  metaOf,
  type NatsInboxNames,
  type NatsMessageMeta,
} from './message.js';
import { natsInboxStats } from './stats.js';

/**
 * A delivered message, as the shared worker runs it: the attempt and replay from its headers.
 *
 * @example
 * ```ts
 * const [delivery] = await transport.receive(1, signal); // delivery.msg.seq, delivery.attempt
 * ```
 */
export interface NatsDelivery extends InboxDelivery {
  readonly msg: JsMsg;
  readonly meta: NatsMessageMeta;
}

/**
 * What the transport is made with, checked by `startNatsWorker`.
 *
 * @example
 * ```ts
 * new NatsTransport({ js, jsm, consumer: () => consumerPromise, names, ackWaitMs: 30_000, pollMs: 5_000, publishTimeoutMs: 5_000 });
 * ```
 */
export interface NatsTransportSettings {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  /** The durable consumer, once made (the worker's start makes it). */
  readonly consumer: Promise<Consumer>;
  readonly names: NatsInboxNames;
  /** The consumer's `AckWait`: renewed every third of it while handlers run. */
  readonly ackWaitMs: number;
  /** How long one pull waits for messages. */
  readonly pollMs: number;
  readonly publishTimeoutMs: number;
}

/** One pull request in flight: what it may still bring, and whether it ended. */
interface Pull {
  remaining: number;
  done: boolean;
  error: unknown;
  readonly messages: ConsumerMessages;
}

/**
 * The transport behind `startNatsWorker`.
 *
 * @example
 * ```ts
 * const core = new InboxWorkerCore(webhooks, new NatsTransport(settings), workerSettings, logger);
 * ```
 */
export class NatsTransport implements InboxTransport<NatsDelivery> {
  readonly name: string;
  readonly redelivery = 'JetStream hands the event out again once its AckWait ends';
  readonly receiveTrouble = 'webhook inbox: cannot pull events from NATS JetStream; retrying';
  readonly receiveRetryMs = 1_000;
  readonly attemptTravels = true;
  readonly ready: Promise<void>;
  readonly #settings: NatsTransportSettings;
  /** The pulls in flight, and the messages they brought that `receive` has not handed out yet. */
  readonly #pulls = new Set<Pull>();
  readonly #buffer: JsMsg[] = [];
  #arrived: (() => void) | undefined;
  #closed = false;

  constructor(settings: NatsTransportSettings) {
    this.#settings = settings;
    this.name = settings.names.stream;
    this.ready = settings.consumer.then(() => undefined);
  }

  readonly stats = (): Promise<InboxStats> => natsInboxStats(this.#settings.jsm, this.#settings.names);

  /**
   * Up to `max` messages. A pull asks JetStream for as many as the free slots, and its messages are
   * handed out as they arrive (the pull stays open until it has them all, or its wait ends); a call
   * that finds more slots free than the open pulls may still bring opens another for the difference.
   */
  async receive(max: number, signal: AbortSignal): Promise<NatsDelivery[]> {
    const outstanding = [...this.#pulls].reduce((sum, pull) => sum + pull.remaining, 0);
    const wanted = max - outstanding - this.#buffer.length;
    if (wanted > 0) await this.#pull(wanted);
    while (this.#buffer.length === 0 && this.#pulls.size > 0 && !signal.aborted) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          signal.removeEventListener('abort', done);
          if (this.#arrived === done) this.#arrived = undefined;
          resolve();
        };
        this.#arrived = done;
        signal.addEventListener('abort', done, { once: true });
      });
    }
    const messages = this.#buffer.splice(0, max);
    if (messages.length === 0 && this.#lastError !== undefined) {
      const error = this.#lastError;
      this.#lastError = undefined;
      throw error;
    }
    return messages.map(deliveryOf);
  }

  #lastError: unknown;

  async #pull(max: number): Promise<void> {
    const consumer = await this.#settings.consumer;
    const messages = await consumer.fetch({ max_messages: max, expires: this.#settings.pollMs });
    const pull: Pull = { remaining: max, done: false, error: undefined, messages };
    this.#pulls.add(pull);
    void (async () => {
      try {
        for await (const msg of messages) {
          pull.remaining--;
          if (this.#closed) {
            // Pulled as the worker closed: handed back at once rather than left to its AckWait.
            msg.nak();
            continue;
          }
          this.#buffer.push(msg);
          this.#arrived?.();
        }
      } catch (error) {
        this.#lastError = error;
      } finally {
        pull.done = true;
        this.#pulls.delete(pull);
        this.#arrived?.();
      }
    })();
  }

  /** A retry's copy handed out before its time goes back to JetStream until then, spending nothing. */
  readonly earlyCopies: EarlyCopies<NatsDelivery> = {
    notBefore: (delivery) => delivery.meta.notBefore,
    holdBackFromMs: 50,
    holdBack: async (delivery, earlyMs) => delivery.msg.nak(earlyMs),
  };

  extend(delivery: NatsDelivery): () => void {
    // Every third of AckWait, so two renewals may be lost before JetStream hands the message out again.
    const heartbeat = setInterval(() => {
      try {
        delivery.msg.working();
      } catch {
        // The connection closed under the run: the message comes back after AckWait, as after a crash.
      }
    }, this.#settings.ackWaitMs / 3);
    return () => clearInterval(heartbeat);
  }

  async acknowledge(delivery: NatsDelivery): Promise<void> {
    delivery.msg.ack();
  }

  /** Handed out again after `delayMs`; the message, its attempt included, stays as it is. */
  async defer(delivery: NatsDelivery, delayMs: number): Promise<void> {
    delivery.msg.nak(delayMs);
  }

  async retry(
    delivery: NatsDelivery,
    next: { attempt: number; delayMs: number; attemptSeal: string | undefined },
  ): Promise<void> {
    const { msg, meta } = delivery;
    const { names, publishTimeoutMs } = this.#settings;
    await this.#settings.js.publish(names.subject, msg.data, {
      msgID: copyMessageId('retry', names.stream, msg.seq, next.attempt),
      headers: headersOf({
        attempt: next.attempt,
        attemptSeal: next.attemptSeal,
        notBefore: Date.now() + next.delayMs,
        replay: meta.replay,
        enqueuedAt: meta.enqueuedAt ?? msg.time.getTime(),
      }),
      timeout: publishTimeoutMs,
    });
    msg.ack();
  }

  async deadLetter(delivery: NatsDelivery, dead: DeadLetter): Promise<void> {
    const { msg, meta } = delivery;
    const { names, publishTimeoutMs } = this.#settings;
    await this.#settings.js.publish(names.deadLetterSubject, msg.data, {
      msgID: copyMessageId('dead-letter', names.stream, msg.seq, dead.attempt),
      headers: headersOf({
        attempt: dead.attempt,
        replay: meta.replay,
        enqueuedAt: meta.enqueuedAt ?? msg.time.getTime(),
        failure: {
          reason: dead.reason,
          attempts: dead.attempt,
          lastError: dead.message,
          stack: dead.stack ?? '',
          failedAt: Date.now(),
          lastAttemptAt: dead.startedAt,
          of: msg.seq,
        },
      }),
      timeout: publishTimeoutMs,
    });
    msg.ack();
  }

  /** No more pulls; what was pulled and not handed out goes back to JetStream at once. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const msg of this.#buffer.splice(0)) {
      try {
        msg.nak();
      } catch {
        // A closed connection: the message comes back after AckWait instead.
      }
    }
    await Promise.all([...this.#pulls].map((pull) => pull.messages.close().catch(() => undefined)));
    this.#arrived?.();
  }
}

function deliveryOf(msg: JsMsg): NatsDelivery {
  const meta = metaOf(msg.headers);
  return {
    msg,
    meta,
    entry: entryOf(msg.data, msg.headers),
    attempt: meta.attempt,
    replayId: meta.replay?.id,
    ids: { sequence: msg.seq },
    unnamed: `(message ${msg.seq})`,
  };
}
