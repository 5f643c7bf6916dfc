/**
 * What the RabbitMQ inbox writes, in one place: an entry as a message body and headers, the headers a
 * retry, a deferral, a replay and a dead letter add, so that the door, the worker and the admin agree
 * on them. The body is the entry's JSON (its seal included); everything the worker changes rides in
 * headers, so a copy never rewrites the bytes the door sealed.
 */
import type { InboxEntry } from 'service-webhooks/core';
import {
  entryBody,
  entryFromNamed,
  META_NAMES,
  metaFromNamed,
  namedValues,
  namedWhole,
} from '../inbox/named-meta.js';

/**
 * The header names the inbox writes (the names SQS's attributes use too).
 *
 * @example
 * ```ts
 * const attempt = Number(message.properties.headers?.[HEADER.attempt] ?? 1);
 * ```
 */
export const HEADER = META_NAMES;

/**
 * Why an event was dead-lettered, as a dead letter's `sw-failure` header holds it.
 *
 * @example
 * ```ts
 * const failure: FailureRecord = { reason: 'last-attempt', attempts: 3, lastError: 'handler_failed: boom', stack: '', failedAt: Date.now(), lastAttemptAt: Date.now() };
 * ```
 */
export interface FailureRecord {
  readonly reason: 'poison' | 'last-attempt' | 'crashed';
  readonly attempts: number;
  readonly lastError: string;
  readonly stack: string;
  readonly failedAt: number;
  readonly lastAttemptAt: number;
}

/**
 * What travels beside the entry in headers: the attempt with its seal, when the door wrote it, and
 * the optional parts (trace context, replay, earliest start, crashes, a dead letter's cause).
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
  readonly crashes?: number | undefined;
  readonly failure?: FailureRecord | undefined;
}

/**
 * A message as the inbox publishes it: the body and the headers.
 *
 * @example
 * ```ts
 * const { body, headers }: OutgoingMessage = messageOf(entry, { attempt: 1, enqueuedAt: Date.now() });
 * ```
 */
export interface OutgoingMessage {
  readonly body: Buffer;
  readonly headers: Record<string, string | number>;
}

/**
 * A message as a consumer or `basic.get` handed it out, as the inbox reads it.
 *
 * @example
 * ```ts
 * const received: ReceivedMessage = receivedOf(message);
 * ```
 */
export interface ReceivedMessage {
  /** The publisher's `messageId` (every copy the inbox writes has its own). */
  readonly messageId: string;
  readonly body: Buffer;
  readonly headers: Readonly<Record<string, unknown>>;
  /** When the copy was published (Unix ms), from the `timestamp` property. */
  readonly publishedAt: number | undefined;
  /** How often the queue handed this copy out before without an acknowledgement (quorum queues' `x-delivery-count`). */
  readonly deliveryCount: number;
}

/**
 * The message of an entry: the body is the entry's JSON (its seal included) without `traceparent`
 * and the attempt (headers), so nothing else of the object rides along.
 *
 * @example
 * ```ts
 * const message = messageOf(entry, { attempt: 1, enqueuedAt: Date.now() });
 * channel.sendToQueue(queue, message.body, { headers: message.headers, persistent: true });
 * ```
 */
export function messageOf(entry: InboxEntry, meta: MessageMeta): OutgoingMessage {
  return { body: Buffer.from(entryBody(entry), 'utf8'), headers: namedValues(meta, entry.traceparent) };
}

/**
 * The headers of `meta`; `traceparent` is the entry's when `meta` carries none.
 *
 * @example
 * ```ts
 * const headers = headersOf({ attempt: 2, attemptSeal, enqueuedAt }, undefined);
 * ```
 */
export function headersOf(meta: MessageMeta, traceparent?: unknown): Record<string, string | number> {
  return namedValues(meta, traceparent);
}

/**
 * The entry in a received message: its body's fields, and from the headers the trace context and the
 * attempt with its seal, all of which `process` checks against the seals; `undefined` fields when the
 * body is not one (a poison message).
 *
 * @example
 * ```ts
 * await webhooks.process(entryOf(received), { attempt: metaOf(received).attempt });
 * ```
 */
export function entryOf(message: ReceivedMessage): InboxEntry {
  return entryFromNamed(message.body.toString('utf8'), (name) => message.headers[name]);
}

/**
 * The metadata of a received message; a message written by something else gets attempt 1.
 *
 * @example
 * ```ts
 * const { attempt, notBefore } = metaOf(received);
 * ```
 */
export function metaOf(message: ReceivedMessage): MessageMeta {
  const { headers } = message;
  return {
    ...metaFromNamed<FailureRecord>((name) => headers[name], message.publishedAt),
    crashes: Math.max(0, namedWhole(headers[HEADER.crashes]) ?? 0),
  };
}

/**
 * A message from amqplib (`consume` or `get`) as the inbox reads it. A message published without a
 * `messageId` (another producer's) gets `''`: the worker names it by its delivery tag in logs, the admin
 * by a digest of its body.
 *
 * @example
 * ```ts
 * channel.consume(queue, (message) => message && deliveries.push(receivedOf(message)));
 * ```
 */
export function receivedOf(message: {
  readonly content: Buffer;
  readonly properties: {
    readonly messageId?: unknown;
    readonly headers?: Record<string, unknown> | undefined;
    readonly timestamp?: unknown;
  };
}): ReceivedMessage {
  const headers = message.properties.headers ?? {};
  const timestamp = message.properties.timestamp;
  return {
    messageId: typeof message.properties.messageId === 'string' ? message.properties.messageId : '',
    body: message.content,
    headers,
    publishedAt: typeof timestamp === 'number' ? normaliseTimestamp(timestamp) : undefined,
    deliveryCount: Math.max(0, namedWhole(headers['x-delivery-count']) ?? 0),
  };
}

/** AMQP timestamps are seconds; the inbox writes milliseconds, and reads either. */
function normaliseTimestamp(value: number): number {
  return value < 10_000_000_000 ? value * 1000 : value;
}
