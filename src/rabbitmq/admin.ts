/**
 * The dead-letter queue of a RabbitMQ inbox (`<queue>.dead-letters`, which no worker consumes) as the
 * core's `InboxAdmin`: list, show, replay, remove; and the inbox's figures.
 *
 * AMQP has no browse: a dead letter is seen only by taking it. A listing takes the dead letters with
 * `basic.get` on a channel of its own, without acknowledging them, at most `scanLimit`, and closes
 * that channel, which hands every one back to the queue. One admin scans one at a time; two admins
 * (two operators) scanning at once each see only what the other does not hold. `get`, `replay` and `remove` take until the
 * one asked for comes up; a replay publishes the new entry (confirmed) before it acknowledges the
 * dead letter, so a crash between the two leaves the dead letter, whose replay then writes the same
 * replay id (the store runs it once).
 */
import { createHash } from 'node:crypto';
import type { Channel, GetMessage } from 'amqplib';
import type { DeadLetter, InboxAdmin, InboxStats, Replay } from 'service-webhooks/core';
import { ConfigurationError, DeadLetterError } from 'service-webhooks/core';
import { checkPage, replayIdOf } from '../inbox/dead-letters.js';
import { Link, publishConfirmed } from './connection.js';
import { entryOf, headersOf, metaOf, type ReceivedMessage, receivedOf } from './message.js';
import { rabbitMQInboxStats } from './stats.js';
import { checkQueueName, checkUrl, declareQueues, queuesOf } from './topology.js';

/**
 * Options of {@link rabbitMQInboxAdmin}.
 *
 * @example
 * ```ts
 * rabbitMQInboxAdmin({ url: process.env.AMQP_URL!, queue: 'billing-webhooks' });
 * ```
 */
export interface RabbitMQInboxAdminOptions {
  /** The broker's `amqp://` or `amqps://` URL; the admin opens its own connection, closed by `close()`. */
  readonly url: string;
  /** @default 'service-webhooks-inbox' */
  readonly queue?: string;
  /** The most dead letters one listing or search takes. @default 1_000 */
  readonly scanLimit?: number;
  /** How long a replay's publish waits for the broker's confirm. @default 5_000 */
  readonly confirmTimeoutMs?: number;
}

/**
 * The tools of a RabbitMQ inbox (see `InboxAdmin`).
 *
 * @example
 * ```ts
 * const admin: RabbitMQInboxAdmin = rabbitMQInboxAdmin({ url });
 * console.log(admin.engine, admin.deadLetterQueue); // 'rabbitmq' 'service-webhooks-inbox.dead-letters'
 * ```
 */
export interface RabbitMQInboxAdmin extends InboxAdmin {
  readonly engine: 'rabbitmq';
  /** The inbox queue, and its dead letters' queue. */
  readonly queue: string;
  readonly deadLetterQueue: string;
}

const WHAT = 'rabbitMQInboxAdmin()';

/** A dead letter taken, and still held, on a scan's channel. */
interface Held {
  readonly id: string;
  readonly message: ReceivedMessage;
  readonly raw: GetMessage;
}

/**
 * Open the figures and dead-letter queue of a RabbitMQ inbox. Dead letters are those the worker wrote
 * (the last failure, a poison or unauthenticated entry, an event that crashed `maxCrashes` workers, each
 * with its cause) and those RabbitMQ moved itself (a message handed out 100 times without an
 * acknowledgement). A dead letter's id is its message id.
 *
 * @example
 * ```ts
 * import { rabbitMQInboxAdmin } from 'service-webhooks/rabbitmq';
 *
 * const admin = rabbitMQInboxAdmin({ url: process.env.AMQP_URL! });
 * const { items } = await admin.list();
 * for (const letter of items) await admin.replay(letter.jobId);
 * await admin.close();
 * ```
 */
export function rabbitMQInboxAdmin(options: RabbitMQInboxAdminOptions): RabbitMQInboxAdmin {
  const url = checkUrl(options?.url, WHAT);
  const queue = checkQueueName(options.queue, WHAT);
  const scanLimit = options.scanLimit ?? 1_000;
  if (!Number.isSafeInteger(scanLimit) || scanLimit < 1) {
    throw new ConfigurationError(
      `${WHAT} \`scanLimit\` must be a whole number ≥ 1; got ${String(scanLimit)}.`,
    );
  }
  const timeoutMs = options.confirmTimeoutMs ?? 5_000;
  const queues = queuesOf(queue);
  const link = new Link(url, {
    connectTimeoutMs: timeoutMs,
    connectionName: 'service-webhooks admin',
    setup: (channel) => declareQueues(channel, queues, true),
  });

  /**
   * Take dead letters on a channel of its own until `stop` holds or none is left, then run `then` on
   * what was found, and close the channel: whatever was taken and not acknowledged goes back.
   */
  // One scan at a time from this admin: a listing holds every dead letter until it ends, and a replay
  // or removal beside it (the dashboard polls while an operator clicks) would not find its own.
  let turn: Promise<unknown> = Promise.resolve();
  const scan = <T>(
    stop: (held: Held) => boolean,
    then: (found: Held | undefined, seen: readonly Held[], channel: Channel) => Promise<T>,
  ): Promise<T> => {
    const run = turn.then(() => scanNow(stop, then));
    turn = run.catch(() => {});
    return run;
  };
  const scanNow = async <T>(
    stop: (held: Held) => boolean,
    then: (found: Held | undefined, seen: readonly Held[], channel: Channel) => Promise<T>,
  ): Promise<T> => {
    const live = await link.open();
    const channel = await live.connection.createChannel();
    channel.on('error', () => {});
    try {
      const seen: Held[] = [];
      let found: Held | undefined;
      while (seen.length < scanLimit) {
        const raw = await channel.get(queues.deadLetters, { noAck: false });
        if (raw === false) break;
        const message = receivedOf(raw);
        const held: Held = { id: idOf(message), message, raw };
        seen.push(held);
        if (stop(held)) {
          found = held;
          break;
        }
      }
      return await then(found, seen, channel);
    } finally {
      await channel.close().catch(() => {});
    }
  };

  const replayHeld = async (held: Held, channel: Channel): Promise<Replay> => {
    const letter = toDeadLetter(held);
    const replayId = replayIdOf(held.id, letter.failedAt ?? letter.enqueuedAt);
    const meta = metaOf(held.message);
    const jobId = await publishConfirmed(
      await link.open(),
      queue,
      {
        body: held.message.body,
        headers: headersOf({
          attempt: 1,
          enqueuedAt: meta.enqueuedAt,
          traceparent: meta.traceparent,
          replay: { id: replayId, of: held.id },
        }),
      },
      timeoutMs,
    );
    channel.ack(held.raw);
    return { jobId, replayId, eventId: letter.eventId, replayOf: held.id };
  };

  // Two replays of one dead letter from this admin at once share one: the second would not find the
  // message (the first holds it) and answer not found.
  const replaying = new Map<string, Promise<Replay>>();

  return {
    engine: 'rabbitmq',
    queue,
    deadLetterQueue: queues.deadLetters,
    async stats(): Promise<InboxStats> {
      return rabbitMQInboxStats((await link.open()).channel, queue);
    },
    async list(page) {
      const { offset, limit } = checkPage(page);
      const seen = await scan(
        () => false,
        async (_found, all) => all,
      );
      const letters = seen
        .map(toDeadLetter)
        .sort((a, b) => (b.failedAt ?? b.enqueuedAt) - (a.failedAt ?? a.enqueuedAt));
      return { items: letters.slice(offset, offset + limit), total: letters.length, offset };
    },
    get: (jobId) =>
      scan(
        (held) => held.id === jobId,
        async (found) => found && toDeadLetter(found),
      ),
    replay(jobId) {
      let pending = replaying.get(jobId);
      if (!pending) {
        pending = scan(
          (held) => held.id === jobId,
          async (found, _seen, channel) => {
            if (!found) throw new DeadLetterError(jobId, undefined);
            return replayHeld(found, channel);
          },
        ).finally(() => replaying.delete(jobId));
        replaying.set(jobId, pending);
      }
      return pending;
    },
    async replayAll({ limit = Number.POSITIVE_INFINITY } = {}) {
      const done: Replay[] = [];
      // One dead letter a scan, acknowledged as it is replayed: each scan starts from the queue's head.
      while (done.length < limit) {
        const replay = await scan(
          () => true,
          async (found, _seen, channel) => (found ? replayHeld(found, channel) : undefined),
        );
        if (!replay) break;
        done.push(replay);
      }
      return done;
    },
    async remove(jobId) {
      await scan(
        (held) => held.id === jobId,
        async (found, _seen, channel) => {
          if (!found) throw new DeadLetterError(jobId, undefined);
          channel.ack(found.raw);
          // A basic.ack has no answer: a round trip after it, so the removal is done when this resolves.
          await channel.checkQueue(queues.deadLetters);
        },
      );
    },
    close: () => link.close(),
  };
}

/** A dead letter's id: its message id, or for a message published without one, a digest of its body. */
function idOf(message: ReceivedMessage): string {
  if (message.messageId !== '') return message.messageId;
  return `body-${createHash('sha256').update(message.body).digest('base64url').slice(0, 22)}`;
}

/** A dead-letter message as the core's `DeadLetter`. */
function toDeadLetter(held: Held): DeadLetter {
  const { message } = held;
  const meta = metaOf(message);
  const entry = entryOf(message);
  const event = entry.event as { id?: unknown; type?: unknown } | undefined;
  const { failure } = meta;
  return {
    jobId: held.id,
    eventId: typeof event?.id === 'string' ? event.id : '',
    eventType: typeof event?.type === 'string' ? event.type : '',
    entry,
    attempts: failure?.attempts ?? meta.attempt,
    // A message RabbitMQ moved itself (the inbox queue's x-delivery-limit) carries no cause of the inbox's.
    lastError:
      failure?.lastError ??
      'moved by RabbitMQ after too many deliveries without an acknowledgement (the workers that took it stopped each time)',
    stacktrace: failure?.stack ? [failure.stack] : [],
    receivedAt: entry.receivedAt,
    enqueuedAt: meta.enqueuedAt,
    lastAttemptAt: failure?.lastAttemptAt,
    failedAt: failure?.failedAt,
    replayOf: meta.replay?.of,
  };
}
