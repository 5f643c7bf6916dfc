/**
 * The dead-letter queue of an SQS inbox as the core's `InboxAdmin`: list, show, replay, remove.
 *
 * SQS has no browse API: a dead letter is seen only by receiving it. `list` is therefore a best-effort
 * peek: it receives what the dead-letter queue hands out (each message hidden for a few seconds while
 * the listing runs, then made visible again), at most `scanLimit` messages, and SQS may leave some
 * out of one listing (a standard queue answers from a sample of its servers). `get`, `replay` and
 * `remove` find a message by id the same way: they receive until it comes up, releasing the others at
 * once, for at most `scanLimit` messages, and answer not found past that.
 */
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { DeadLetter, InboxAdmin, InboxStats, Replay } from 'service-webhooks/core';
import { ConfigurationError, DeadLetterError } from 'service-webhooks/core';
import { checkPage, replayIdOf } from '../inbox/dead-letters.js';
import { deduplicationId, entryOf, isFifoQueue, messageOf, metaOf, type ReceivedMessage } from './message.js';
import { checkClientAndUrl, once, readDeadLetterQueueUrl } from './queue-settings.js';
import { sqsInboxStats } from './stats.js';
import { received } from './transport.js';

/**
 * Options of {@link sqsInboxAdmin}.
 *
 * @example
 * ```ts
 * sqsInboxAdmin({ client, queueUrl: process.env.INBOX_QUEUE_URL! });
 * ```
 */
export interface SqsInboxAdminOptions {
  readonly client: SQSClient;
  /** The inbox queue's URL: replays go there. */
  readonly queueUrl: string;
  /** The dead-letter queue's URL. @default the queue's `RedrivePolicy` target */
  readonly deadLetterQueueUrl?: string;
  /** The most dead letters one listing or search receives. @default 1_000 */
  readonly scanLimit?: number;
}

/**
 * The tools of an SQS inbox (see `InboxAdmin`).
 *
 * @example
 * ```ts
 * const admin: SqsInboxAdmin = sqsInboxAdmin({ client, queueUrl });
 * console.log(admin.engine); // 'sqs'
 * ```
 */
export interface SqsInboxAdmin extends InboxAdmin {
  readonly engine: 'sqs';
}

const WHAT = 'sqsInboxAdmin()';
/** How long a listed message stays hidden while the listing runs, before it is released. */
const PEEK_SECONDS = 5;
/** How long a message found by id is held while it is replayed or removed. */
const HOLD_SECONDS = 30;

/**
 * Open the figures and the dead-letter queue of an SQS inbox. Replaying a dead letter writes a new
 * message to the inbox queue carrying a replay id derived from the dead letter (`replayIdOf` its
 * message id and failure time), then deletes the dead letter: replaying one dead letter twice runs the
 * handlers once (the replay id is deduplicated in the store; a crash between the two writes leaves the
 * dead letter, whose replay writes the same replay id).
 *
 * @example
 * ```ts
 * import { sqsInboxAdmin } from 'service-webhooks/sqs';
 *
 * const admin = sqsInboxAdmin({ client, queueUrl: process.env.INBOX_QUEUE_URL! });
 * const { items } = await admin.list();
 * for (const letter of items) await admin.replay(letter.jobId);
 * ```
 */
export function sqsInboxAdmin(options: SqsInboxAdminOptions): SqsInboxAdmin {
  checkClientAndUrl(WHAT, options?.client, options?.queueUrl, true);
  const scanLimit = options.scanLimit ?? 1_000;
  if (!Number.isSafeInteger(scanLimit) || scanLimit < 1) {
    throw new ConfigurationError(
      `${WHAT} \`scanLimit\` must be a whole number ≥ 1; got ${String(scanLimit)}.`,
    );
  }
  const { client, queueUrl } = options;
  const dlqUrl = once(async () => {
    const url = options.deadLetterQueueUrl ?? (await readDeadLetterQueueUrl(client, queueUrl));
    if (url === undefined) {
      throw new ConfigurationError(`${WHAT} needs \`deadLetterQueueUrl\`, or a queue with a RedrivePolicy.`);
    }
    return url;
  });

  const receive = async (visibility: number): Promise<ReceivedMessage[]> => {
    const { Messages } = await client.send(
      new ReceiveMessageCommand({
        QueueUrl: await dlqUrl(),
        MaxNumberOfMessages: 10,
        VisibilityTimeout: visibility,
        WaitTimeSeconds: 0,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    return (Messages ?? []).map((message: Message) => received(message));
  };

  const release = async (messages: readonly ReceivedMessage[]): Promise<void> => {
    for (let start = 0; start < messages.length; start += 10) {
      const batch = messages.slice(start, start + 10);
      await client
        .send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: await dlqUrl(),
            Entries: batch.map((message, n) => ({
              Id: String(n),
              ReceiptHandle: message.receiptHandle,
              VisibilityTimeout: 0,
            })),
          }),
        )
        .catch(() => {
          // They come back when their short visibility ends.
        });
    }
  };

  /** Receive until `stop` says so or nothing new comes up; answers every distinct message seen. */
  const scan = async (
    visibility: number,
    stop: (message: ReceivedMessage) => boolean,
  ): Promise<{ seen: ReceivedMessage[]; found: ReceivedMessage | undefined }> => {
    const seen = new Map<string, ReceivedMessage>();
    let emptyRounds = 0;
    while (seen.size < scanLimit && emptyRounds < 2) {
      const batch = await receive(visibility);
      const fresh = batch.filter((message) => !seen.has(message.messageId));
      emptyRounds = fresh.length === 0 ? emptyRounds + 1 : 0;
      // The whole batch is recorded before looking for the one wanted: every message received is held
      // and must be released.
      for (const message of fresh) seen.set(message.messageId, message);
      const found = fresh.find(stop);
      if (found) return { seen: [...seen.values()], found };
    }
    return { seen: [...seen.values()], found: undefined };
  };

  /** Find a dead letter by id and hold it; the others seen on the way are released at once. */
  const find = async (jobId: string): Promise<ReceivedMessage | undefined> => {
    const { seen, found } = await scan(HOLD_SECONDS, (message) => message.messageId === jobId);
    await release(seen.filter((message) => message !== found));
    return found;
  };

  const replayHeld = async (message: ReceivedMessage): Promise<Replay> => {
    const letter = toDeadLetter(message);
    const replayId = replayIdOf(message.messageId, letter.failedAt ?? letter.enqueuedAt);
    const meta = metaOf(message);
    const outgoing = messageOf(entryOf(message), {
      attempt: 1,
      enqueuedAt: meta.enqueuedAt,
      traceparent: meta.traceparent,
      replay: { id: replayId, of: message.messageId },
    });
    const fifo = isFifoQueue(queueUrl);
    const dedup = deduplicationId(replayId, 1, replayId);
    const { MessageId } = await client.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: message.body,
        MessageAttributes: outgoing.attributes,
        ...(fifo ? { MessageDeduplicationId: dedup, MessageGroupId: message.groupId ?? dedup } : {}),
      }),
    );
    // Written before the dead letter goes: a crash in between leaves both, and the dead letter's
    // replay then writes the same replay id, which the store runs once.
    await client.send(
      new DeleteMessageCommand({ QueueUrl: await dlqUrl(), ReceiptHandle: message.receiptHandle }),
    );
    return { jobId: MessageId ?? '', replayId, eventId: letter.eventId, replayOf: message.messageId };
  };

  // Two replays of one dead letter from this admin at once share one: the second would not find the
  // message (the first holds it) and answer not found.
  const replaying = new Map<string, Promise<Replay>>();
  let listing: Promise<ReceivedMessage[]> | undefined;

  const admin: SqsInboxAdmin = {
    engine: 'sqs',
    async stats(): Promise<InboxStats> {
      return sqsInboxStats(client, queueUrl, await dlqUrl());
    },
    async list(page) {
      const { offset, limit } = checkPage(page);
      // Listings at once from this admin share one scan: two would each hide from the other what it
      // received, and each see part of the queue.
      listing ??= (async () => {
        try {
          const { seen } = await scan(PEEK_SECONDS, () => false);
          await release(seen);
          return seen;
        } finally {
          listing = undefined;
        }
      })();
      const seen = await listing;
      const letters = seen
        .map(toDeadLetter)
        .sort((a, b) => (b.failedAt ?? b.enqueuedAt) - (a.failedAt ?? a.enqueuedAt));
      return { items: letters.slice(offset, offset + limit), total: letters.length, offset };
    },
    async get(jobId) {
      const found = await find(jobId);
      if (!found) return undefined;
      await release([found]);
      return toDeadLetter(found);
    },
    replay(jobId) {
      let pending = replaying.get(jobId);
      if (!pending) {
        pending = (async () => {
          const found = await find(jobId);
          if (!found) throw new DeadLetterError(jobId, undefined);
          return replayHeld(found);
        })().finally(() => replaying.delete(jobId));
        replaying.set(jobId, pending);
      }
      return pending;
    },
    async replayAll({ limit = Number.POSITIVE_INFINITY } = {}) {
      const done: Replay[] = [];
      while (done.length < limit) {
        const batch = await receive(HOLD_SECONDS);
        if (batch.length === 0) break;
        const take = batch.slice(0, Math.max(0, limit - done.length));
        await release(batch.slice(take.length));
        for (const message of take) done.push(await replayHeld(message));
      }
      return done;
    },
    async remove(jobId) {
      const found = await find(jobId);
      if (!found) throw new DeadLetterError(jobId, undefined);
      await client.send(
        new DeleteMessageCommand({ QueueUrl: await dlqUrl(), ReceiptHandle: found.receiptHandle }),
      );
    },
    async close() {
      // The SDK client is the application's: nothing of the admin's own to close.
    },
  };
  return admin;
}

/** A dead-letter message as the core's `DeadLetter`. */
function toDeadLetter(message: ReceivedMessage): DeadLetter {
  const meta = metaOf(message);
  const entry = entryOf(message);
  const event = entry.event as { id?: unknown; type?: unknown } | undefined;
  const failure = meta.failure;
  return {
    jobId: message.messageId,
    eventId: typeof event?.id === 'string' ? event.id : '',
    eventType: typeof event?.type === 'string' ? event.type : '',
    entry,
    attempts: failure?.attempts ?? meta.attempt,
    // A message SQS moved itself (the queue's redrive policy) carries no cause of the inbox's.
    lastError:
      failure?.lastError ??
      `moved by the queue's redrive policy after ${message.receiveCount} receives without an answer (a worker crashed or hung each time)`,
    stacktrace: failure?.stack ? [failure.stack] : [],
    receivedAt: entry.receivedAt,
    enqueuedAt: meta.enqueuedAt,
    lastAttemptAt: failure?.lastAttemptAt,
    failedAt: failure?.failedAt,
    replayOf: meta.replay?.of,
  };
}
