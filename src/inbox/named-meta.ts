/**
 * How an inbox copy carries its entry on the engines that keep metadata beside the body under names
 * (RabbitMQ's headers, SQS's message attributes): the body, the names, and how the metadata is
 * written and read. One place, so that a copy the door, the worker or the admin writes reads the same
 * on both engines, and a fix to one is a fix to the other. Each engine turns the named values into
 * its own wire form (`src/rabbitmq/message.ts`, `src/sqs/message.ts`).
 */
import type { InboxEntry } from 'service-webhooks/core';
import { carriedEntry, carriedFields } from './entry-fields.js';

/**
 * The names the inbox writes its metadata under, the same on RabbitMQ (headers) and SQS (attributes).
 *
 * @example
 * ```ts
 * const attempt = Number(headers[META_NAMES.attempt] ?? 1);
 * ```
 */
export const META_NAMES = Object.freeze({
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
  /** Times a worker stopped while it held this event, over every copy before this one (RabbitMQ). */
  crashes: 'sw-crashes',
  /** A dead letter's cause, as JSON. */
  failure: 'sw-failure',
});

/**
 * The longest `lastError` and stack a dead letter carries: the whole record stays within SQS's
 * worker headroom, and a RabbitMQ header stays small.
 */
const MAX_ERROR_CHARS = 1_000;
const MAX_STACK_CHARS = 4_000;

/**
 * A dead letter's cause, as its `sw-failure` holds it; each engine names its own reasons.
 *
 * @example
 * ```ts
 * const failure: NamedFailure = { reason: 'poison', attempts: 1, lastError: 'invalid entry', stack: '', failedAt: Date.now(), lastAttemptAt: Date.now() };
 * ```
 */
export interface NamedFailure {
  readonly reason: string;
  readonly attempts: number;
  readonly lastError: string;
  readonly stack: string;
  readonly failedAt: number;
  readonly lastAttemptAt: number;
}

/**
 * What travels beside the entry under {@link META_NAMES}.
 *
 * @example
 * ```ts
 * const meta: NamedMeta<NamedFailure> = { attempt: 1, enqueuedAt: Date.now() };
 * ```
 */
export interface NamedMeta<F extends NamedFailure> {
  readonly attempt: number;
  /** The seal of `attempt` beyond the first (`webhooks.sealAttempt`); a replay, back at 1, has none. */
  readonly attemptSeal?: string | undefined;
  readonly enqueuedAt: number;
  readonly traceparent?: string | undefined;
  readonly replay?: { readonly id: string; readonly of: string } | undefined;
  readonly notBefore?: number | undefined;
  readonly crashes?: number | undefined;
  readonly failure?: F | undefined;
}

/**
 * One named value as read from a message: a header or attribute as the engine's client hands it
 * over (a string, a number, AMQP's bytes), `undefined` when the message has none of that name.
 */
export type ReadNamed = (name: string) => unknown;

/**
 * The body of an entry: its JSON (its seal included) without `traceparent` and the attempt, which
 * ride under names, so nothing else of the object rides along and a copy never rewrites the bytes
 * the door sealed.
 *
 * @example
 * ```ts
 * const body = entryBody(entry);
 * ```
 */
export function entryBody(entry: InboxEntry): string {
  return JSON.stringify(carriedFields(entry));
}

/**
 * The named values of `meta`, in the order they are written: numbers for the counts and times, text
 * for the rest; `traceparent` is the entry's when `meta` carries none.
 *
 * @example
 * ```ts
 * const headers = namedValues({ attempt: 2, attemptSeal, enqueuedAt }, entry.traceparent);
 * ```
 */
export function namedValues(
  meta: NamedMeta<NamedFailure>,
  traceparent?: unknown,
): Record<string, string | number> {
  const values: Record<string, string | number> = {
    [META_NAMES.attempt]: meta.attempt,
    [META_NAMES.enqueuedAt]: meta.enqueuedAt,
  };
  if (meta.attempt !== 1 && typeof meta.attemptSeal === 'string')
    values[META_NAMES.attemptSeal] = meta.attemptSeal;
  const trace = meta.traceparent ?? traceparent;
  if (typeof trace === 'string' && trace !== '') values[META_NAMES.traceparent] = trace;
  if (meta.replay) values[META_NAMES.replay] = `${meta.replay.id} ${meta.replay.of}`;
  if (meta.notBefore !== undefined) values[META_NAMES.notBefore] = meta.notBefore;
  if (meta.crashes !== undefined && meta.crashes > 0) values[META_NAMES.crashes] = meta.crashes;
  if (meta.failure) {
    const failure = {
      ...meta.failure,
      lastError: meta.failure.lastError.slice(0, MAX_ERROR_CHARS),
      stack: meta.failure.stack.slice(0, MAX_STACK_CHARS),
    };
    values[META_NAMES.failure] = JSON.stringify(failure);
  }
  return values;
}

/**
 * The entry in a received message: its body's fields, and from the named values the trace context
 * and the attempt with its seal, all of which `process` checks against the seals; `undefined` fields
 * when the body is not one (a poison message).
 *
 * @example
 * ```ts
 * const entry = entryFromNamed(body, (name) => headers[name]);
 * ```
 */
export function entryFromNamed(body: string, read: ReadNamed): InboxEntry {
  let data: unknown;
  try {
    data = JSON.parse(body);
  } catch {
    // Not JSON: process() refuses the entry as invalid, and it is dead-lettered as poison.
  }
  const entry = carriedEntry(data);
  const traceparent = namedText(read(META_NAMES.traceparent));
  if (traceparent !== undefined) entry.traceparent = traceparent;
  const attempt = namedWhole(read(META_NAMES.attempt));
  if (attempt !== undefined) entry.attempt = attempt;
  const attemptSeal = namedText(read(META_NAMES.attemptSeal));
  if (attemptSeal !== undefined) entry.attemptSeal = attemptSeal;
  return entry;
}

/**
 * The metadata of a received message but its crash count (an engine that counts crashes reads
 * them itself); a message written by something else gets attempt 1, and its `enqueuedAt` is when the
 * copy was sent, or now.
 *
 * @example
 * ```ts
 * const { attempt, notBefore } = metaFromNamed((name) => attributes[name], sentAt);
 * ```
 */
export function metaFromNamed<F extends NamedFailure>(
  read: ReadNamed,
  sentAt: number | undefined,
): NamedMeta<F> {
  const replayText = namedText(read(META_NAMES.replay));
  const space = replayText?.indexOf(' ') ?? -1;
  let failure: F | undefined;
  const failureText = namedText(read(META_NAMES.failure));
  if (failureText !== undefined) {
    try {
      failure = JSON.parse(failureText) as F;
    } catch {
      failure = undefined;
    }
  }
  return {
    attempt: Math.max(1, namedWhole(read(META_NAMES.attempt)) ?? 1),
    attemptSeal: namedText(read(META_NAMES.attemptSeal)),
    enqueuedAt: namedWhole(read(META_NAMES.enqueuedAt)) ?? sentAt ?? Date.now(),
    traceparent: namedText(read(META_NAMES.traceparent)),
    replay:
      replayText !== undefined && space > 0
        ? { id: replayText.slice(0, space), of: replayText.slice(space + 1) }
        : undefined,
    notBefore: namedWhole(read(META_NAMES.notBefore)),
    failure,
  };
}

/**
 * A named value as text: a string, or AMQP's bytes; `undefined` otherwise.
 *
 * @example
 * ```ts
 * namedText(Buffer.from('abc')); // 'abc'
 * ```
 */
export function namedText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return undefined;
}

/**
 * A named value as a whole number, from a number or its text; `undefined` otherwise.
 *
 * @example
 * ```ts
 * namedWhole('3'); // 3
 * ```
 */
export function namedWhole(value: unknown): number | undefined {
  const number = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
  return Number.isSafeInteger(number) ? number : undefined;
}
