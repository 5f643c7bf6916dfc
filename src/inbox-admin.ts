/**
 * What every inbox engine's admin answers (BullMQ, SQS, pg-boss, yours): the inbox's figures and its
 * dead-letter list, in one shape, so that the CLI's `inbox` commands, the dashboard and
 * `inboxConformanceSuite` drive any engine alike. Types only: the core carries no engine code.
 */
import type { InboxEntry } from './types.js';

/**
 * The inbox's figures at one moment. An engine that cannot tell two of them apart says so on its
 * admin (SQS counts running and retrying events together, as in flight).
 *
 * @example
 * ```ts
 * const { depth, oldestWaitingMs, deadLettered } = await admin.stats();
 * metrics.gauge('webhooks.inbox.depth', depth);
 * ```
 */
export interface InboxStats {
  /** Events waiting for a worker. */
  readonly waiting: number;
  /** Events whose handlers run now. */
  readonly active: number;
  /** Events waiting for their next attempt (after a failure, or while another worker held them). */
  readonly delayed: number;
  /** `waiting + active + delayed`: everything not yet handled nor dead-lettered. */
  readonly depth: number;
  /** Events that failed their last attempt, kept in the dead-letter list until replayed or removed. */
  readonly deadLettered: number;
  /**
   * How long ago the door received the next event to run (the oldest waiting), in milliseconds;
   * `undefined` when none is waiting, or when the engine cannot see it without taking the event.
   */
  readonly oldestWaitingMs: number | undefined;
  /**
   * Events a worker's flow control deferred (its `rate`, a key's `concurrencyPerKey` slots, or their
   * shared state out of reach), waiting for their time; counted in `delayed` too. No attempt spent.
   * `undefined` when the engine cannot tell (SQS: a hidden message carries no mark to count).
   */
  readonly throttled?: number | undefined;
  /**
   * Events waiting out a downstream's rate limit (a handler threw `RateLimitedError`); counted in
   * `delayed` too. No attempt spent. `undefined` when the engine cannot tell.
   */
  readonly rateLimited?: number | undefined;
}

/**
 * One dead-lettered event.
 *
 * @example
 * ```ts
 * const letter = await admin.get(jobId);
 * console.log(letter?.eventId, letter?.attempts, letter?.lastError);
 * ```
 */
export interface DeadLetter {
  /** The engine's id of the dead letter (a BullMQ or pg-boss job id, an SQS message id): what `get`, `replay` and `remove` take. */
  readonly jobId: string;
  readonly eventId: string;
  readonly eventType: string;
  /** The entry as the door wrote it: the event, when it was received, the secret that verified it. */
  readonly entry: InboxEntry;
  /** Attempts made, the last one included. */
  readonly attempts: number;
  /** `code: message` of the last failure (the handler's own message when it threw). */
  readonly lastError: string;
  /** The stacks of the latest failures, newest last (empty where the engine keeps none). */
  readonly stacktrace: readonly string[];
  /** When the door received the event (Unix ms). */
  readonly receivedAt: number;
  /** When the event was written to the queue (Unix ms). */
  readonly enqueuedAt: number;
  /** When the last attempt started (Unix ms), where the engine records it. */
  readonly lastAttemptAt: number | undefined;
  /** When it was dead-lettered (Unix ms), where the engine records it. */
  readonly failedAt: number | undefined;
  /** On a replay that failed in turn, the dead letter it replayed. */
  readonly replayOf: string | undefined;
}

/**
 * A page of the dead-letter list, newest first where the engine can order it.
 *
 * @example
 * ```ts
 * for (let offset = 0; ; offset += 50) {
 *   const page = await admin.list({ offset, limit: 50 });
 *   if (page.items.length === 0) break;
 * }
 * ```
 */
export interface DeadLetterPage {
  readonly items: readonly DeadLetter[];
  /** Dead-lettered events in all, at the time of the listing. */
  readonly total: number;
  readonly offset: number;
}

/**
 * What a replay wrote.
 *
 * @example
 * ```ts
 * const { jobId, replayId } = await admin.replay(letter.jobId);
 * ```
 */
export interface Replay {
  /** The new entry's id in the engine. */
  readonly jobId: string;
  /** The replay's id, under which `process` deduplicates this replay. */
  readonly replayId: string;
  readonly eventId: string;
  /** The dead letter it replays (removed from the list). */
  readonly replayOf: string;
}

/**
 * The tools of one inbox, whatever its engine: its figures and its dead-letter list.
 *
 * @example
 * ```ts
 * import { inboxAdmin } from 'service-webhooks/bullmq';
 * const admin: InboxAdmin = inboxAdmin({ connection: process.env.REDIS_URL! });
 * const { items } = await admin.list();
 * for (const letter of items) await admin.replay(letter.jobId);
 * await admin.close();
 * ```
 */
export interface InboxAdmin {
  /** The engine's name, as the CLI's `--engine` takes it: `bullmq`, `sqs`, `pg-boss`. */
  readonly engine: string;
  /** The inbox's figures now. */
  stats(): Promise<InboxStats>;
  /** A page of dead-lettered events, newest first. @default { offset: 0, limit: 20 } */
  list(page?: { readonly offset?: number; readonly limit?: number }): Promise<DeadLetterPage>;
  /** One dead-lettered event, or `undefined` when no dead letter has this id. */
  get(jobId: string): Promise<DeadLetter | undefined>;
  /**
   * Replay a dead-lettered event: a new entry runs its handlers once more (with a fresh attempt
   * budget), even though its id was seen, and the dead letter leaves the list. The replay id is
   * derived from the dead letter, so replaying one dead letter twice (a retried command, two
   * operators at once) runs the handlers once. Throws `DeadLetterError` when it is missing or not
   * dead-lettered.
   */
  replay(jobId: string): Promise<Replay>;
  /** Replay every dead-lettered event (at most `limit`); answers the replays made. */
  replayAll(options?: { readonly limit?: number }): Promise<readonly Replay[]>;
  /** Drop a dead-lettered event for good. Throws `DeadLetterError` when it is not one. */
  remove(jobId: string): Promise<void>;
  /** Close what the admin opened (clients it made from a URL; yours stay open). */
  close(): Promise<void>;
}
