/**
 * `service-webhooks/pg-boss`: the durable inbox on PostgreSQL, through pg-boss. The door
 * (`pgBossInbox`, passed to `createWebhooks({ inbox })`) verifies, deduplicates and writes each event
 * as a pg-boss job and answers 200 once PostgreSQL committed it; workers (`startPgBossWorker`) run the
 * handlers under the idempotency store's claim, retry on the receiver's own schedule, and dead-letter
 * what still fails to `<queue>-dead-letters`; `pgBossInboxAdmin` lists, inspects, replays and removes
 * dead letters. pg-boss (10 on Node 20, 12 on Node 22+; the inbox takes your instance and types it by
 * the calls it makes) is an optional peer: `npm install pg-boss`.
 *
 * How it maps onto pg-boss, and where it differs from the BullMQ inbox:
 * - One job per event, its id a UUID derived from the queue and the dedup key: a second write of one
 *   key adds nothing while the first job is in pg-boss's job table (until pg-boss archives it, 12 h
 *   after completion by default; the store deduplicates for `dedupTtlSeconds` anyway).
 * - Attempts and their schedule are the worker's, counted in the job's data: a failed attempt writes
 *   the next attempt as a new job due after `backoff`'s delay (`startAfter`), then completes the failed
 *   one. pg-boss's own retries serve only to recover a dead worker's job: it expires an `active` job
 *   after `expireInSeconds` (found at its maintenance or supervise interval) and hands it out again,
 *   which counts in pg-boss's `retry_count` but spends none of the event's attempts; the worker
 *   dead-letters an event found abandoned more than `maxCrashes` times.
 * - A crash between writing the next job and completing the failed one leaves both: the failed job
 *   expires and runs again as the same attempt (writing the same next job: nothing added), and the
 *   store's claim keeps the handlers from completing twice.
 * - Dead letters are the jobs of `<queue>-dead-letters` (pg-boss's `deadLetter` queue, which no worker
 *   takes from), with the last failure's message and stack in the job's data.
 * - The door's claim and the job's insert are not one transaction: the `InboxQueue` seam passes
 *   `enqueue(entry, key)` no connection, and the claim is the store's own autocommitted statement. It
 *   would buy nothing the protocol lacks: a claim whose insert failed is a lease that ends before the
 *   sender's first retry (the sender was answered 503 or nothing, and retries), and an insert whose
 *   claim was not completed is written again under the same job id (nothing added).
 *
 * @example
 * ```ts
 * import PgBoss from 'pg-boss';
 * import { createWebhooks } from 'service-webhooks';
 * import { pgBossInbox, startPgBossWorker } from 'service-webhooks/pg-boss';
 *
 * const boss = new PgBoss(process.env.DATABASE_URL!);
 * await boss.start();
 * // worker.ts starts first: it writes its settings (expiry, crash bound) on the queue.
 * // web.ts: the door
 * const door = createWebhooks({ secret, store, inbox: pgBossInbox({ boss }) });
 * // worker.ts: the handlers
 * const webhooks = createWebhooks({ secret, store });
 * webhooks.on('user.created', async (event, ctx) => sendWelcomeMail(event.data.email, { signal: ctx.signal }));
 * await startPgBossWorker(webhooks, { boss });
 * ```
 * @packageDocumentation
 */

export type { DeadLetter, DeadLetterPage, InboxAdmin, InboxStats, Replay } from 'service-webhooks/core';
export {
  DeadLetterError,
  INBOX_DEFAULTS,
  InboxBacklogError,
  type InboxBackoff,
  type InboxLogger,
  type InboxLogRecord,
  type InboxMonitorOptions,
} from 'service-webhooks/core';
export { type PgBossInboxAdmin, type PgBossInboxAdminOptions, pgBossInboxAdmin } from './admin.js';
export { type PgBossInbox, type PgBossInboxOptions, pgBossInbox } from './inbox-queue.js';
export {
  DEFAULT_PG_BOSS_QUEUE,
  type DeadLetterRecord,
  deadLetterQueueOf,
  eventJobId,
  type InboxJobData,
  type PgBossJob,
  type PgBossLike,
} from './job.js';
export { pgBossInboxStats } from './stats.js';
export { type PgBossWorker, type PgBossWorkerOptions, startPgBossWorker } from './worker.js';
