/**
 * What the SQS inbox writes, in one place: an entry as a message body and attributes, the attributes
 * a retry, a replay and a dead letter add, the size SQS counts, and the deduplication id of a FIFO
 * queue, so that the door, the consumer and the admin agree on them.
 */
import { createHash } from 'node:crypto';
import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { InboxEntry } from 'service-webhooks/core';
import { entryBody, entryFromNamed, META_NAMES, metaFromNamed, namedValues } from '../inbox/named-meta.js';

/** SQS writes no crash count: a crashed worker's message comes back by its visibility timeout. */
const { crashes: _crashes, ...attributeNames } = META_NAMES;

/**
 * The message attribute names the inbox writes (SQS allows 10 a message; the inbox uses at most 7),
 * the names RabbitMQ's headers use too.
 *
 * @example
 * ```ts
 * const attempt = Number(message.MessageAttributes?.[ATTRIBUTE.attempt]?.StringValue ?? 1);
 * ```
 */
export const ATTRIBUTE = Object.freeze(attributeNames);

/**
 * The bytes kept free beside the door's message for what a worker adds later (a dead letter's cause,
 * a retry's attributes): the door refuses an entry that would leave less, so every copy a worker
 * writes still fits the queue.
 *
 * @example
 * ```ts
 * const largestBody = maximumMessageSize - WORKER_HEADROOM_BYTES - 200; // less the attributes' own bytes
 * ```
 */
export const WORKER_HEADROOM_BYTES = 8_192;

/**
 * SQS's message size when the queue's `MaximumMessageSize` cannot be read: the documented default of a
 * queue made before 2025 (256 KiB), the smallest a queue of default settings may have.
 *
 * @example
 * ```ts
 * sqsInbox({ client, queueUrl, maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES });
 * ```
 */
export const DEFAULT_MAX_MESSAGE_BYTES = 262_144;
/**
 * SQS's largest message, the documented maximum of `MaximumMessageSize` (1 MiB).
 *
 * @example
 * ```ts
 * await sqs.send(new SetQueueAttributesCommand({ QueueUrl, Attributes: { MaximumMessageSize: String(SQS_MAX_MESSAGE_BYTES) } }));
 * ```
 */
export const SQS_MAX_MESSAGE_BYTES = 1_048_576;
/** SQS's longest `DelaySeconds` (15 minutes); a longer retry delay rides in `sw-not-before`. */
export const SQS_MAX_DELAY_SECONDS = 900;
/** SQS's longest visibility timeout (12 hours). */
export const SQS_MAX_VISIBILITY_SECONDS = 43_200;
/** SQS's longest `MessageDeduplicationId` and `MessageGroupId`. */
export const SQS_MAX_ID_CHARS = 128;

/**
 * Why an event was dead-lettered, as a dead letter's `sw-failure` attribute holds it.
 *
 * @example
 * ```ts
 * const failure: FailureRecord = { reason: 'last-attempt', attempts: 3, lastError: 'handler_failed: boom', stack: '', failedAt: Date.now(), lastAttemptAt: Date.now() };
 * ```
 */
export interface FailureRecord {
  readonly reason: 'poison' | 'last-attempt';
  readonly attempts: number;
  readonly lastError: string;
  readonly stack: string;
  readonly failedAt: number;
  readonly lastAttemptAt: number;
}

/**
 * What travels beside the entry: the attempt, when it was first queued, and the optional parts.
 *
 * @example
 * ```ts
 * const meta: MessageMeta = { attempt: 1, enqueuedAt: Date.now() };
 * ```
 */
export interface MessageMeta {
  readonly attempt: number;
  /** The seal of `attempt` beyond the first (`webhooks.sealAttempt`); a replay, back at 1, has none. */
  readonly attemptSeal?: string | undefined;
  readonly enqueuedAt: number;
  readonly traceparent?: string | undefined;
  readonly replay?: { readonly id: string; readonly of: string } | undefined;
  readonly notBefore?: number | undefined;
  readonly failure?: FailureRecord | undefined;
}

/**
 * A message as the SDK sends it: body and attributes.
 *
 * @example
 * ```ts
 * const { body, attributes }: OutgoingMessage = messageOf(entry, { attempt: 1, enqueuedAt: Date.now() });
 * ```
 */
export interface OutgoingMessage {
  readonly body: string;
  readonly attributes: Record<string, MessageAttributeValue>;
}

/**
 * A received message, whichever way it came (the SDK's `ReceiveMessage`, or a Lambda `SQSRecord`):
 * its string attributes by name, and the system attributes the inbox reads.
 */
export interface ReceivedMessage {
  readonly messageId: string;
  readonly receiptHandle: string;
  readonly body: string;
  readonly attributes: Readonly<Record<string, string | undefined>>;
  /** When SQS accepted this copy (Unix ms). */
  readonly sentAt: number | undefined;
  /** SQS's receive count of this copy (includes crash recoveries and deferrals: not the attempt). */
  readonly receiveCount: number;
  /** A FIFO queue's `MessageGroupId`. */
  readonly groupId?: string | undefined;
}

/**
 * The message of an entry: the body is the entry's JSON (its seal included) without `traceparent`
 * and the attempt (attributes), so nothing else of the object rides along and a reader tells event
 * from metadata at a glance.
 *
 * @example
 * ```ts
 * const message = messageOf(entry, { attempt: 1, enqueuedAt: Date.now() });
 * await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: message.body, MessageAttributes: message.attributes }));
 * ```
 */
export function messageOf(entry: InboxEntry, meta: MessageMeta): OutgoingMessage {
  const attributes: Record<string, MessageAttributeValue> = {};
  for (const [name, value] of Object.entries(namedValues(meta, entry.traceparent))) {
    attributes[name] =
      typeof value === 'number'
        ? { DataType: 'Number', StringValue: String(value) }
        : { DataType: 'String', StringValue: value };
  }
  return { body: entryBody(entry), attributes };
}

/**
 * The bytes SQS counts against `MaximumMessageSize`: the body's UTF-8 bytes, and each attribute's
 * name, data type and value (SQS's documented rule for message attributes).
 *
 * @example
 * ```ts
 * if (messageBytes(message) + WORKER_HEADROOM_BYTES > 262_144) console.warn('too large for the queue');
 * ```
 */
export function messageBytes(message: OutgoingMessage): number {
  let size = Buffer.byteLength(message.body, 'utf8');
  for (const [name, value] of Object.entries(message.attributes)) {
    size += Buffer.byteLength(name, 'utf8') + Buffer.byteLength(value.DataType ?? '', 'utf8');
    if (value.StringValue !== undefined) size += Buffer.byteLength(value.StringValue, 'utf8');
    if (value.BinaryValue !== undefined) size += value.BinaryValue.byteLength;
  }
  return size;
}

/**
 * The entry in a received message: its body's fields, and from the attributes the trace context and
 * the attempt with its seal, all of which `process` checks against the seals; `undefined` fields when
 * the body is not one (a poison message).
 */
export function entryOf(message: ReceivedMessage): InboxEntry {
  return entryFromNamed(message.body, (name) => message.attributes[name]);
}

/** The metadata of a received message; a message written by something else gets attempt 1. */
export function metaOf(message: ReceivedMessage): MessageMeta {
  return metaFromNamed<FailureRecord>((name) => message.attributes[name], message.sentAt);
}

/**
 * A FIFO queue's `MessageDeduplicationId` for one write of an event: SQS allows 128 characters and a
 * dedup key reaches 400, so it is a SHA-256 digest (43 characters), stable for one key. A retry copy
 * and a replay must not be taken for the door's write (SQS drops a repeated id for 5 minutes), so
 * they mix in their attempt and replay id; the door's write is the key's digest alone.
 *
 * @example
 * ```ts
 * deduplicationId('evt_123'); // 43 characters, the same for every write of this key
 * ```
 */
export function deduplicationId(key: string, attempt = 1, replayId?: string): string {
  const source = attempt === 1 && replayId === undefined ? key : `${key}\n${attempt}\n${replayId ?? ''}`;
  return createHash('sha256').update(source).digest('base64url');
}

/** Whether a queue URL is a FIFO queue's (SQS requires the `.fifo` suffix on their names). */
export function isFifoQueue(queueUrl: string): boolean {
  return queueUrl.endsWith('.fifo');
}
