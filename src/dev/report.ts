/**
 * What a receiver tells the local dashboard about one delivery it answered: the wire format between
 * `devReporter` (in the receiver's process) and `service-webhooks dev` (the dashboard's server).
 * Kept in one file so both sides compile against the same shape.
 *
 * @packageDocumentation
 */
import type { DeliveryOutcome, HandlerStep } from 'service-webhooks/core';

/** An error as the receiver saw it, flattened to plain JSON (the `cause` chain, three deep at most). */
export interface ReportedError {
  readonly name: string;
  /** The status table's code (`WebhookError.code`), or the error's own `code` when it has one. */
  readonly code: string | undefined;
  readonly message: string;
  readonly stack: string | undefined;
  readonly cause: ReportedError | undefined;
}

/** One delivery (or one inbox worker's run) as the receiver's logger saw it. */
export interface ReceiverReport {
  /** The event id as verified; absent when the delivery was refused before its signature held. */
  readonly eventId: string | undefined;
  readonly eventType: string | undefined;
  readonly outcome: DeliveryOutcome;
  readonly status: number;
  /** The status table's code on a refusal or a failure. */
  readonly code: string | undefined;
  /** How long the receiver took, from arrival to its answer (milliseconds). */
  readonly durationMs: number;
  /** Which configured secret verified the signature (0 is the first), when one did. */
  readonly secretIndex: number | undefined;
  readonly error: ReportedError | undefined;
  /** The handlers finished after the sender had been answered `handler_timeout`. */
  readonly late: boolean;
  /** The logger's level for this record. */
  readonly level: 'info' | 'warn' | 'error';
  /** The logger's message. */
  readonly message: string | undefined;
  /** When the receiver made the record (ISO 8601). */
  readonly at: string;
  /** The receiver's process id, to tell several receivers (or workers) apart. */
  readonly pid: number;
  /** Which handlers ran, in order, and how each ended (absent from reporters before they were reported). */
  readonly handlers?: readonly HandlerStep[] | undefined;
  /** Set on an inbox worker's run (after the door's 2xx): its attempt, and the replay's id of a replayed dead letter. */
  readonly inboxRun?: { readonly attempt: number; readonly replayId: string | undefined } | undefined;
}

/** The body of `POST /_dev/api/report`: the records made since the previous post. */
export interface ReportBatch {
  readonly records: readonly ReceiverReport[];
}

/** The header that carries the dashboard's per-start token. */
export const DEV_TOKEN_HEADER = 'x-service-webhooks-dev-token';

/** The environment variable `devReporter` reads the dashboard's report address from. */
export const DEV_URL_ENV = 'SERVICE_WEBHOOKS_DEV_URL';

/**
 * The largest batch body the dashboard reads: its request limit (`MAX_REQUEST_BYTES`, 1 MiB, in
 * src/sandbox/http-io.ts; a test holds the two equal). The reporter never posts more at once.
 */
export const MAX_BATCH_BYTES = 1_048_576;

/** A reported error's message is cut to this many characters, and a marker says how many more there were. */
export const MAX_REPORTED_MESSAGE_CHARS = 4_096;

/** A reported error's stack is cut to this many characters (its message within it cut as the message is). */
export const MAX_REPORTED_STACK_CHARS = 16_384;
