/**
 * The errors every inbox engine (BullMQ, SQS, pg-boss, yours) shares: a backlog reported to `onError`,
 * and the mistakes the dead-letter tools refuse. Exported by the core, so that each engine's subpath
 * throws the same classes and `instanceof` holds whichever engine a tool (the CLI) drives.
 */
import {
  InboxUnavailableError,
  PayloadTooLargeError,
  WebhookError,
  type WebhookErrorCode,
} from './errors.js';
import { formatDuration } from './format-duration.js';

/**
 * The code of {@link InboxBacklogError}. The core's `WebhookErrorCode` does not list it yet (see the
 * report of issue 23): until it does, the code is asserted here, in this one place.
 */
const INBOX_BACKLOG: WebhookErrorCode = 'inbox_backlog';

/**
 * The inbox crossed a threshold of the worker's `monitor` option: more events queued than
 * `maxDepth`, or the next event to run waiting longer than `maxWaitMs`. Reported to `onError` once
 * when the threshold is crossed (again only after it was back under it); the figures are on it.
 *
 * @example
 * ```ts
 * webhooks.onError((error) => {
 *   if (error instanceof InboxBacklogError) page(`inbox: ${error.depth} queued, oldest ${error.oldestWaitingMs} ms`);
 * });
 * ```
 */
export class InboxBacklogError extends WebhookError {
  override name = 'InboxBacklogError';
  /** Events waiting, running or waiting for a retry. */
  readonly depth: number;
  /** How long ago the door received the next event to run (undefined with none waiting). */
  readonly oldestWaitingMs: number | undefined;

  constructor(queueName: string, depth: number, oldestWaitingMs: number | undefined, reason: string) {
    super(
      INBOX_BACKLOG,
      `The inbox ${queueName} is behind (${reason}): ${depth} events queued${
        oldestWaitingMs === undefined ? '' : `, the next one received ${formatDuration(oldestWaitingMs)} ago`
      }. Add workers or fix what slows the handlers.`,
    );
    this.depth = depth;
    this.oldestWaitingMs = oldestWaitingMs;
  }
}

/**
 * What the dead-letter tools refuse: no job of that id, or a job that is not dead-lettered (it is
 * waiting, running, retrying or done), so it cannot be replayed or removed as one.
 *
 * @example
 * ```ts
 * try { await admin.replay(jobId); } catch (e) { if (e instanceof DeadLetterError) console.error(e.message); }
 * ```
 */
export class DeadLetterError extends Error {
  override name = 'DeadLetterError';
  /** `not_found`, or `not_dead_lettered` with the job's state in the message. */
  readonly code: 'not_found' | 'not_dead_lettered';
  readonly jobId: string;

  constructor(jobId: string, state: string | undefined) {
    super(
      state === undefined
        ? `No inbox entry has the id ${jobId}.`
        : `Inbox entry ${jobId} is ${state}, not dead-lettered.`,
    );
    this.code = state === undefined ? 'not_found' : 'not_dead_lettered';
    this.jobId = jobId;
  }
}

/**
 * What the door answers when the inbox refused a write: an entry the engine can never hold (a
 * `PayloadTooLargeError`, such as an SQS message over the queue's size) is a 413, as a body over
 * `maxBodyBytes` is; anything else is the queue being unavailable (503, the sender retries later).
 */
export function inboxWriteError(cause: unknown): WebhookError {
  return cause instanceof PayloadTooLargeError ? cause : new InboxUnavailableError({ cause });
}
