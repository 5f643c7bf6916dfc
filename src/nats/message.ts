/**
 * What the inbox writes to JetStream, in one place: the names derived from the stream's, the message
 * of an entry (the entry's JSON as the payload, the worker's metadata in headers), its `Nats-Msg-Id`s,
 * and the dead letter's cause. The door, the worker and the admin all read and write it here.
 */
import { createHash } from 'node:crypto';
import type { MsgHdrs } from '@nats-io/transport-node';
import { headers as newHeaders } from '@nats-io/transport-node';
import type { InboxEntry } from 'service-webhooks/core';
import { ConfigurationError } from 'service-webhooks/core';
import { carriedEntry, carriedFields } from '../inbox/entry-fields.js';

/**
 * The stream the inbox uses unless `stream` says otherwise.
 *
 * @example
 * ```ts
 * await jsm.streams.info(DEFAULT_NATS_STREAM); // the stream natsInbox() writes to by default
 * ```
 */
export const DEFAULT_NATS_STREAM = 'service-webhooks-inbox';

/**
 * Every name of one inbox, derived from its stream's: the inbox stream and its subject, the durable
 * pull consumer the workers share, the dead-letter stream and its subject.
 *
 * @example
 * ```ts
 * const names = natsInboxNames('billing'); // names.subject === 'billing.entries'
 * ```
 */
export interface NatsInboxNames {
  readonly stream: string;
  readonly subject: string;
  readonly consumer: string;
  readonly deadLetterStream: string;
  readonly deadLetterSubject: string;
}

/**
 * The names of the inbox whose stream is `stream` (checked: JetStream refuses `.`, `*`, `>`, spaces
 * and path separators in a stream's name).
 *
 * @example
 * ```ts
 * natsInboxNames('service-webhooks-inbox').deadLetterStream; // 'service-webhooks-inbox-dead-letters'
 * ```
 */
export function natsInboxNames(
  stream: string | undefined = DEFAULT_NATS_STREAM,
  what = 'natsInbox()',
): NatsInboxNames {
  if (typeof stream !== 'string' || !/^[A-Za-z0-9_-]{1,200}$/.test(stream)) {
    throw new ConfigurationError(
      `${what} \`stream\` must be 1 to 200 letters, digits, \`-\` or \`_\` (a JetStream stream name); got ${String(stream)}.`,
    );
  }
  return {
    stream,
    subject: `${stream}.entries`,
    consumer: `${stream}-workers`,
    deadLetterStream: `${stream}-dead-letters`,
    deadLetterSubject: `${stream}.dead-letters`,
  };
}

/**
 * The headers the inbox reads and writes beside the payload. The door writes none: a first attempt
 * carries nothing but the entry.
 *
 * @example
 * ```ts
 * const attempt = Number(msg.headers?.get(HEADER.attempt) ?? 1);
 * ```
 */
export const HEADER = {
  attempt: 'Sw-Attempt',
  attemptSeal: 'Sw-Attempt-Seal',
  notBefore: 'Sw-Not-Before',
  replay: 'Sw-Replay',
  enqueuedAt: 'Sw-Enqueued-At',
  failure: 'Sw-Failure',
} as const;

/** Most characters of a dead letter's error and stack kept in its header (NATS bounds a message). */
const MAX_ERROR_CHARS = 2_000;
const MAX_STACK_CHARS = 4_000;

/**
 * Why an event was dead-lettered, as a dead letter's `Sw-Failure` header holds it.
 *
 * @example
 * ```ts
 * const failure: NatsFailureRecord = { reason: 'last-attempt', attempts: 3, lastError: 'handler_failed: boom', stack: '', failedAt: Date.now(), lastAttemptAt: Date.now(), of: 42 };
 * ```
 */
export interface NatsFailureRecord {
  readonly reason: 'poison' | 'last-attempt' | 'crashed';
  readonly attempts: number;
  readonly lastError: string;
  readonly stack: string;
  readonly failedAt: number;
  readonly lastAttemptAt: number | undefined;
  /** The inbox stream's sequence of the message that failed. */
  readonly of: number;
}

/**
 * What travels beside the entry, in headers: the attempt (from 1) and its seal, when the copy is due,
 * the replay it is, when the event was first queued, and a dead letter's cause.
 *
 * @example
 * ```ts
 * const meta: NatsMessageMeta = { attempt: 2, attemptSeal, notBefore: Date.now() + 30_000 };
 * ```
 */
export interface NatsMessageMeta {
  readonly attempt: number;
  readonly attemptSeal?: string | undefined;
  readonly notBefore?: number | undefined;
  readonly replay?: { readonly id: string; readonly of: string } | undefined;
  readonly enqueuedAt?: number | undefined;
  readonly failure?: NatsFailureRecord | undefined;
}

/**
 * The payload of an entry: its JSON, the seal and trace context included (the worker checks them
 * against the seal), nothing else of the object.
 *
 * @example
 * ```ts
 * await js.publish(names.subject, payloadOf(entry), { msgID: doorMessageId(key) });
 * ```
 */
export function payloadOf(entry: InboxEntry): string {
  const { traceparent } = entry;
  return JSON.stringify(
    traceparent === undefined ? carriedFields(entry) : { ...carriedFields(entry), traceparent },
  );
}

/** The headers of a copy the worker or the admin writes: a retry, a replay, a dead letter. */
export function headersOf(meta: NatsMessageMeta): MsgHdrs {
  const { attempt, attemptSeal, notBefore, replay, enqueuedAt, failure } = meta;
  const h = newHeaders();
  h.set(HEADER.attempt, String(attempt));
  if (attempt !== 1 && typeof attemptSeal === 'string') h.set(HEADER.attemptSeal, attemptSeal);
  if (notBefore !== undefined) h.set(HEADER.notBefore, String(notBefore));
  if (replay) h.set(HEADER.replay, `${replay.id} ${replay.of}`);
  if (enqueuedAt !== undefined) h.set(HEADER.enqueuedAt, String(enqueuedAt));
  if (failure) {
    h.set(
      HEADER.failure,
      asciiJson({
        ...failure,
        lastError: failure.lastError.slice(0, MAX_ERROR_CHARS),
        stack: failure.stack.slice(0, MAX_STACK_CHARS),
      }),
    );
  }
  return h;
}

/**
 * The entry in a message: the payload's fields, with the attempt and its seal from the headers, all
 * of which `process` checks against the seals; `undefined` fields when the payload is not an entry
 * (a poison message, dead-lettered at once).
 *
 * @example
 * ```ts
 * const entry = entryOf(msg.data, msg.headers);
 * ```
 */
export function entryOf(data: Uint8Array, h: MsgHdrs | undefined): InboxEntry {
  let parsed: Partial<InboxEntry> | undefined;
  try {
    parsed = JSON.parse(Buffer.from(data).toString('utf8')) as Partial<InboxEntry>;
  } catch {
    // Not JSON: process() refuses the entry as invalid, and it is dead-lettered as poison.
  }
  const entry = carriedEntry(parsed);
  if (parsed?.traceparent !== undefined) entry.traceparent = parsed.traceparent;
  const attempt = wholeNumber(header(h, HEADER.attempt));
  if (attempt !== undefined) entry.attempt = attempt;
  const attemptSeal = header(h, HEADER.attemptSeal);
  if (attemptSeal !== undefined) entry.attemptSeal = attemptSeal;
  return entry;
}

/**
 * The metadata in a message's headers; a message without them (the door's) is attempt 1.
 *
 * @example
 * ```ts
 * const { attempt, notBefore } = metaOf(msg.headers);
 * ```
 */
export function metaOf(h: MsgHdrs | undefined): NatsMessageMeta {
  const replayText = header(h, HEADER.replay);
  const space = replayText?.indexOf(' ') ?? -1;
  let failure: NatsFailureRecord | undefined;
  const failureText = header(h, HEADER.failure);
  if (failureText !== undefined) {
    try {
      failure = JSON.parse(failureText) as NatsFailureRecord;
    } catch {
      failure = undefined;
    }
  }
  return {
    attempt: Math.max(1, wholeNumber(header(h, HEADER.attempt)) ?? 1),
    attemptSeal: header(h, HEADER.attemptSeal),
    notBefore: wholeNumber(header(h, HEADER.notBefore)),
    replay:
      replayText !== undefined && space > 0
        ? { id: replayText.slice(0, space), of: replayText.slice(space + 1) }
        : undefined,
    enqueuedAt: wholeNumber(header(h, HEADER.enqueuedAt)),
    failure,
  };
}

/**
 * The door's `Nats-Msg-Id` for an event: a SHA-256 digest of its dedup key (a key may hold up to 400
 * characters of any kind, a header value may not hold a line break), the same for every write of one
 * key, so JetStream stores one message per key within the stream's duplicate window.
 *
 * @example
 * ```ts
 * await js.publish(subject, payload, { msgID: doorMessageId('evt_123') });
 * ```
 */
export function doorMessageId(key: string): string {
  return digest(`door\n${key}`);
}

/**
 * The `Nats-Msg-Id` of a copy written for the message at `sequence` (a retry's next attempt, a dead
 * letter): the same when a worker that crashed after writing it runs that message again, so the
 * stream keeps one copy within its duplicate window.
 */
export function copyMessageId(
  kind: 'retry' | 'dead-letter',
  stream: string,
  sequence: number,
  attempt: number,
): string {
  return digest(`${kind}\n${stream}\n${sequence}\n${attempt}`);
}

/** The `Nats-Msg-Id` of a replay: two replays of one dead letter at once write one message. */
export function replayMessageId(replayId: string): string {
  return digest(`replay\n${replayId}`);
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest('base64url');
}

function header(h: MsgHdrs | undefined, name: string): string | undefined {
  if (!h?.has(name)) return undefined;
  return h.get(name);
}

function wholeNumber(text: string | undefined): number | undefined {
  if (text === undefined || text === '') return undefined;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : undefined;
}

/** JSON with every character past ASCII escaped: a header value stays one line of ASCII. */
function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
