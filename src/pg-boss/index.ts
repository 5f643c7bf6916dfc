/**
 * `service-webhooks/pg-boss`: the durable inbox on PostgreSQL, through pg-boss. The door
 * (`pgBossInbox`, passed to `createWebhooks({ inbox })`) verifies, deduplicates and writes each event
 * as a pg-boss job and answers 200 once PostgreSQL committed it; workers (`startPgBossWorker`) run the
 * handlers under the idempotency store's claim, retry on the receiver's own schedule, and dead-letter
 * what still fails to `<queue>-dead-letters`; `pgBossInboxAdmin` lists, inspects, replays and removes
 * dead letters. pg-boss is an optional peer: `npm install pg-boss`.
 *
 * @example
 * ```ts
 * import PgBoss from 'pg-boss';
 * import { createWebhooks } from 'service-webhooks';
 * import { pgBossInbox, startPgBossWorker } from 'service-webhooks/pg-boss';
 *
 * const boss = new PgBoss(process.env.DATABASE_URL!);
 * await boss.start();
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
export { DeadLetterError, InboxBacklogError } from 'service-webhooks/core';
export { INBOX_DEFAULTS, type InboxBackoff } from '../inbox/backoff.js';
export type { InboxLogger, InboxLogRecord } from '../inbox/log.js';
export type { InboxMonitorOptions } from '../inbox/monitor.js';
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
