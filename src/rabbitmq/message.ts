/**
 * What the RabbitMQ inbox writes, in one place: an entry as a message body and headers, the headers a
 * retry, a deferral, a replay and a dead letter add, so that the door, the worker and the admin agree
 * on them. The body is the entry's JSON (its seal included); everything the worker changes rides in
 * headers, so a copy never rewrites the bytes the door sealed.
 */
import type { InboxEntry } from 'service-webhooks/core';

/**
 * The header names the inbox writes.
 *
 * @example
 * ```ts
 * const attempt = Number(message.properties.headers?.[HEADER.attempt] ?? 1);
 * ```
 */
export const HEADER = Object.freeze({
  /** The attempt this message is, from 1: the attempt count travels with the message. */
  attempt: 'sw-attempt',
  /** A retry copy's seal of its attempt (`webhooks.sealAttempt`): a changed `sw-attempt` is refused. */
  attemptSeal: 'sw-attempt-seal',
  /** When the door wrote the event (Unix ms): kept across copies and dead letters. */
  enqueuedAt: 'sw-enqueued-at',
  /** The door's W3C trace context. */
  traceparent: 'sw-traceparent',
  /** A replay: `<replay id> <dead letter's message id>`. */
  replay: 'sw-replay',
  /** A copy's earliest start (Unix ms): a worker that receives it before then holds it back again. */
  notBefore: 'sw-not-before',
  /** Times a worker stopped while it held this event, over every copy before this one. */
  crashes: 'sw-crashes',
  /** A dead letter's cause, as JSON ({@link FailureRecord}). */
  failure: 'sw-failure',
});

/** The longest `lastError` and stack a dead letter carries. */
const MAX_ERROR_CHARS = 1_000;
const MAX_STACK_CHARS = 4_000;

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
 * What travels beside the entry in headers.
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
  const fields = { event: entry.event, receivedAt: entry.receivedAt, secretIndex: entry.secretIndex };
  const body = Buffer.from(
    JSON.stringify(typeof entry.seal === 'string' ? { ...fields, seal: entry.seal } : fields),
    'utf8',
  );
  return { body, headers: headersOf(meta, entry.traceparent) };
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
  const headers: Record<string, string | number> = {
    [HEADER.attempt]: meta.attempt,
    [HEADER.enqueuedAt]: meta.enqueuedAt,
  };
  if (meta.attempt !== 1 && typeof meta.attemptSeal === 'string')
    headers[HEADER.attemptSeal] = meta.attemptSeal;
  const trace = meta.traceparent ?? traceparent;
  if (typeof trace === 'string' && trace !== '') headers[HEADER.traceparent] = trace;
  if (meta.replay) headers[HEADER.replay] = `${meta.replay.id} ${meta.replay.of}`;
  if (meta.notBefore !== undefined) headers[HEADER.notBefore] = meta.notBefore;
  if (meta.crashes !== undefined && meta.crashes > 0) headers[HEADER.crashes] = meta.crashes;
  if (meta.failure) {
    const failure: FailureRecord = {
      ...meta.failure,
      lastError: meta.failure.lastError.slice(0, MAX_ERROR_CHARS),
      stack: meta.failure.stack.slice(0, MAX_STACK_CHARS),
    };
    headers[HEADER.failure] = JSON.stringify(failure);
  }
  return headers;
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
  let data: Partial<InboxEntry> | undefined;
  try {
    data = JSON.parse(message.body.toString('utf8')) as Partial<InboxEntry>;
  } catch {
    // Not JSON: process() refuses the entry as invalid, and it is dead-lettered as poison.
  }
  if (typeof data !== 'object' || data === null) data = undefined;
  const { headers } = message;
  const entry: { -readonly [K in keyof InboxEntry]: InboxEntry[K] } = {
    event: data?.event as InboxEntry['event'],
    receivedAt: data?.receivedAt as number,
    secretIndex: data?.secretIndex as number,
  };
  if (data?.seal !== undefined) entry.seal = data.seal;
  const traceparent = text(headers[HEADER.traceparent]);
  if (traceparent !== undefined) entry.traceparent = traceparent;
  const attempt = wholeNumber(headers[HEADER.attempt]);
  if (attempt !== undefined) entry.attempt = attempt;
  const attemptSeal = text(headers[HEADER.attemptSeal]);
  if (attemptSeal !== undefined) entry.attemptSeal = attemptSeal;
  return entry;
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
  const attempt = wholeNumber(headers[HEADER.attempt]) ?? 1;
  const replayText = text(headers[HEADER.replay]);
  const space = replayText?.indexOf(' ') ?? -1;
  let failure: FailureRecord | undefined;
  const failureText = text(headers[HEADER.failure]);
  if (failureText !== undefined) {
    try {
      failure = JSON.parse(failureText) as FailureRecord;
    } catch {
      failure = undefined;
    }
  }
  return {
    attempt: Math.max(1, attempt),
    attemptSeal: text(headers[HEADER.attemptSeal]),
    enqueuedAt: wholeNumber(headers[HEADER.enqueuedAt]) ?? message.publishedAt ?? Date.now(),
    traceparent: text(headers[HEADER.traceparent]),
    replay:
      replayText !== undefined && space > 0
        ? { id: replayText.slice(0, space), of: replayText.slice(space + 1) }
        : undefined,
    notBefore: wholeNumber(headers[HEADER.notBefore]),
    crashes: Math.max(0, wholeNumber(headers[HEADER.crashes]) ?? 0),
    failure,
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
    deliveryCount: Math.max(0, wholeNumber(headers['x-delivery-count']) ?? 0),
  };
}

/** AMQP timestamps are seconds; the inbox writes milliseconds, and reads either. */
function normaliseTimestamp(value: number): number {
  return value < 10_000_000_000 ? value * 1000 : value;
}

function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return undefined;
}

function wholeNumber(value: unknown): number | undefined {
  const number = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
  return Number.isSafeInteger(number) ? number : undefined;
}
