/**
 * The door's side of the SQS inbox: an `InboxQueue` that sends each verified, deduplicated event as
 * one SQS message and fulfils once SQS has accepted it.
 */
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { InboxEntry, InboxQueue } from 'service-webhooks/core';
import { ConfigurationError } from 'service-webhooks/core';
import { SqsMessageTooLargeError } from './errors.js';
import {
  DEFAULT_MAX_MESSAGE_BYTES,
  deduplicationId,
  isFifoQueue,
  messageBytes,
  messageOf,
  SQS_MAX_ID_CHARS,
  WORKER_HEADROOM_BYTES,
} from './message.js';
import { checkClientAndUrl, checkMaxMessageBytes, once, readMaxMessageBytes } from './queue-settings.js';

/**
 * Options of {@link sqsInbox}.
 *
 * @example
 * ```ts
 * sqsInbox({ client: new SQSClient({}), queueUrl: process.env.INBOX_QUEUE_URL! });
 * ```
 */
export interface SqsInboxOptions {
  /** The SDK v3 client (`@aws-sdk/client-sqs`); the inbox never closes it. */
  readonly client: SQSClient;
  /** The inbox queue's URL. A name ending in `.fifo` is a FIFO queue. */
  readonly queueUrl: string;
  /**
   * FIFO queues only: the `MessageGroupId` of an event. SQS runs the messages of one group in order,
   * one at a time, so a group per event (the default, the key's digest) runs events in parallel; a
   * function of the entry (`(entry) => entry.event.data.accountId`) keeps one account's events in order.
   * @default the digest of the event's dedup key
   */
  readonly messageGroupId?: string | ((entry: InboxEntry) => string);
  /**
   * The queue's `MaximumMessageSize`, when the door may not read it (`sqs:GetQueueAttributes`).
   * Otherwise read once, at the first event (until it is read, 256 KiB, SQS's former default, is
   * assumed, and the read is tried again at the next event).
   */
  readonly maxMessageBytes?: number;
}

/**
 * The door's SQS inbox.
 *
 * @example
 * ```ts
 * const inbox = sqsInbox({ client, queueUrl });
 * const webhooks = createWebhooks({ secret, store, inbox });
 * ```
 */
export interface SqsInbox extends InboxQueue {
  readonly client: SQSClient;
  readonly queueUrl: string;
  /** Whether the queue is FIFO (its URL ends in `.fifo`). */
  readonly fifo: boolean;
  /** The largest message the queue takes: the option, or `MaximumMessageSize` read from the queue. */
  maxMessageBytes(): Promise<number>;
}

const WHAT = 'sqsInbox()';

/**
 * An inbox on Amazon SQS for `createWebhooks({ inbox })`. Each event becomes one message whose body is
 * the entry's JSON; `enqueue` fulfils once `SendMessage` has answered (SQS stores a message
 * redundantly before it answers), and rejects when SQS cannot be reached, so the sender is answered
 * 503 and retries.
 *
 * A FIFO queue's `MessageDeduplicationId` is the SHA-256 digest of the event's dedup key (SQS allows
 * 128 characters; a key reaches 400), so a second write of one event within SQS's 5-minute window adds
 * nothing. A standard queue may hold two copies of an event (a write that timed out but landed, then
 * the sender's retry): the store's claim runs its handlers once all the same.
 *
 * An entry larger than the queue's `MaximumMessageSize` (256 KiB on older queues, up to 1 MiB), less
 * 8 KiB kept for what the worker adds, is refused with {@link SqsMessageTooLargeError} as the cause of
 * the 503: never truncated.
 *
 * @example
 * ```ts
 * import { SQSClient } from '@aws-sdk/client-sqs';
 * import { createWebhooks } from 'service-webhooks';
 * import { sqsInbox } from 'service-webhooks/sqs';
 *
 * const inbox = sqsInbox({ client: new SQSClient({}), queueUrl: process.env.INBOX_QUEUE_URL! });
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store, inbox });
 * ```
 */
export function sqsInbox(options: SqsInboxOptions): SqsInbox {
  checkClientAndUrl(WHAT, options?.client, options?.queueUrl, true);
  const { client, queueUrl } = options;
  const fixedMax = checkMaxMessageBytes(WHAT, options.maxMessageBytes);
  const group = options.messageGroupId;
  if (group !== undefined && typeof group !== 'function') {
    if (typeof group !== 'string' || group.length === 0 || group.length > SQS_MAX_ID_CHARS) {
      throw new ConfigurationError(
        `${WHAT} \`messageGroupId\` must be a string of 1 to ${SQS_MAX_ID_CHARS} characters or a function; got ${String(group)}.`,
      );
    }
  }
  const fifo = isFifoQueue(queueUrl);
  const maxMessageBytes =
    fixedMax === undefined ? once(() => readMaxMessageBytes(client, queueUrl)) : async () => fixedMax;

  return {
    client,
    queueUrl,
    fifo,
    maxMessageBytes,
    async enqueue(entry: InboxEntry, key: string): Promise<void> {
      const message = messageOf(entry, { attempt: 1, enqueuedAt: Date.now() });
      const bytes = messageBytes(message) + WORKER_HEADROOM_BYTES;
      // Unreadable (no sqs:GetQueueAttributes permission, or SQS unreachable, when the send fails
      // anyway): the documented default, so an event that may not fit is refused rather than lost.
      const max = await maxMessageBytes().catch(() => DEFAULT_MAX_MESSAGE_BYTES);
      if (bytes > max) throw new SqsMessageTooLargeError(entry.event.id, bytes, max);
      const dedup = deduplicationId(key);
      await client.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: message.body,
          MessageAttributes: message.attributes,
          ...(fifo
            ? {
                MessageDeduplicationId: dedup,
                MessageGroupId: groupOf(group, entry, dedup),
              }
            : {}),
        }),
      );
    },
  };
}

function groupOf(group: SqsInboxOptions['messageGroupId'], entry: InboxEntry, fallback: string): string {
  if (group === undefined) return fallback;
  if (typeof group === 'string') return group;
  const value = group(entry);
  if (typeof value !== 'string' || value.length === 0 || value.length > SQS_MAX_ID_CHARS) {
    throw new ConfigurationError(
      `${WHAT} \`messageGroupId\` returned ${JSON.stringify(value)}: it must be 1 to ${SQS_MAX_ID_CHARS} characters.`,
    );
  }
  return value;
}
