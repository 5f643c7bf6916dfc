import type { AnyWebhookEvent, BackgroundErrorListener, IdempotencyStore, WebhookEvent } from './types.js';

/**
 * A verified event on its way into an inbox: what the door writes and a worker later reads back.
 * Plain JSON values only, so any engine can store it as it is.
 *
 * @example
 * ```ts
 * const entry: InboxEntry = { event, receivedAt: Date.now(), secretIndex: 0 };
 * await queue.enqueue(entry);
 * ```
 */
export interface InboxEntry {
  /** The event as verified and parsed at the door (of a documented type, or any other the service adds). */
  readonly event: AnyWebhookEvent | WebhookEvent;
  /** When the door first received it (Unix milliseconds): handlers see it as `ctx.receivedAt`. */
  readonly receivedAt: number;
  /** The index of the secret that verified it. */
  readonly secretIndex: number;
}

/**
 * The seam between the receiver and a durable queue engine (BullMQ today; pg-boss or SQS could follow
 * without a change to the core). With `createWebhooks({ inbox })` the receiver verifies, checks the
 * envelope and the age, deduplicates, and then calls `enqueue` instead of running handlers: it answers
 * 200 once the returned promise fulfils, and 503 `inbox_unavailable` (so the sender retries) when it
 * rejects or does not settle within `storeTimeoutMs`. Workers then run the handlers with
 * {@link Webhooks.process}.
 *
 * An engine must fulfil only once the entry is durable, and must not create a second job for an id it
 * already holds (the door may enqueue twice when a first attempt timed out but landed).
 *
 * @example
 * ```ts
 * const inbox: InboxQueue = {
 *   async enqueue(entry) {
 *     await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: JSON.stringify(entry), MessageDeduplicationId: entry.event.id }));
 *   },
 * };
 * const webhooks = createWebhooks({ secret, store, inbox });
 * ```
 */
export interface InboxQueue {
  /**
   * Write the entry durably. `key` is the event's dedup key in this receiver's scope (at most 400
   * characters): use it as the job id, so that two receivers sharing a queue never merge events.
   */
  enqueue(entry: InboxEntry, key: string): Promise<void>;
  /**
   * Optional, as {@link IdempotencyStore.onBackgroundError}: the receiver calls it once with its way to
   * report, and the engine passes it what goes wrong between calls (a dropped connection, an eviction
   * policy that would lose queued events).
   */
  onBackgroundError?(listener: BackgroundErrorListener): void;
}

/**
 * How a worker runs one entry through {@link Webhooks.process}.
 *
 * @example
 * ```ts
 * await webhooks.process(entry, { attempt: job.attemptsMade + 1, signal: controller.signal });
 * ```
 */
export interface ProcessOptions {
  /** This run's attempt count, from 1: handlers see it as `ctx.attempt`. */
  readonly attempt?: number;
  /**
   * Aborting it aborts `ctx.signal` (the worker is shutting down, the job was cancelled). The claim
   * stays until the handlers settle, as after a timeout, so another worker never runs them alongside.
   */
  readonly signal?: AbortSignal;
  /** Budget of the handlers of this run; `ctx.signal` aborts at the end of it. @default 300_000 */
  readonly handlerTimeoutMs?: number;
  /**
   * A deliberate re-run (a replay from the dead-letter list) runs the handlers once more even though
   * the event was handled: give each replay its own id, under which it is itself deduplicated.
   */
  readonly replayId?: string;
}

/**
 * How {@link Webhooks.process} ended: the handlers ran and their completion was recorded, or the event
 * had already been handled (by an earlier run, or in the request before the inbox was turned on).
 */
export type ProcessResult = 'handled' | 'duplicate';
