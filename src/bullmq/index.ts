/**
 * `service-webhooks/bullmq`: acknowledge fast, process later. The door (`bullmqInbox`, passed to
 * `createWebhooks({ inbox })`) verifies, deduplicates and writes each event to a BullMQ queue on Redis
 * and answers 200 once Redis holds it; workers (`startInboxWorker`, in this process or others) run
 * the handlers from the queue under the idempotency store's claim, retry on the receiver's own
 * schedule (days, not the sender's 21 minutes), and dead-letter what still fails; `inboxAdmin` and
 * `service-webhooks inbox` list, inspect, replay and remove dead letters. BullMQ (≥ 6) and ioredis
 * (≥ 5) are optional peers: `npm install bullmq ioredis`.
 *
 * @example
 * ```ts
 * // web.ts: the door
 * import { createWebhooks } from 'service-webhooks';
 * import { bullmqInbox } from 'service-webhooks/bullmq';
 * const webhooks = createWebhooks({ secret, store, inbox: bullmqInbox({ connection: process.env.REDIS_URL! }) });
 *
 * // worker.ts: the handlers
 * import { startInboxWorker } from 'service-webhooks/bullmq';
 * const webhooks = createWebhooks({ secret, store });
 * webhooks.on('user.created', async (event, ctx) => sendWelcomeMail(event.data.email, { signal: ctx.signal }));
 * startInboxWorker(webhooks, { connection: process.env.REDIS_URL! });
 * ```
 * @packageDocumentation
 */

export type {
  DeadLetter,
  DeadLetterPage,
  InboxAdmin,
  InboxStats,
  Replay,
} from 'service-webhooks/core';
// The classes and helpers every engine shares live in the core (one copy, so `instanceof` holds);
// re-exported here, where BullMQ users first met them.
export {
  DeadLetterError,
  formatDuration,
  INBOX_DEFAULTS,
  InboxBacklogError,
  type InboxBackoff,
  type InboxLogger,
  type InboxLogRecord,
  type InboxMonitorOptions,
} from 'service-webhooks/core';
export type { EvictionPolicyMode } from '../stores/redis-eviction.js';
export { type BullmqInboxAdmin, type InboxAdminOptions, inboxAdmin } from './admin.js';
export type { InboxConnection, InboxLocation } from './connection.js';
export {
  type BullmqInbox,
  type BullmqInboxOptions,
  bullmqInbox,
  type InboxBullQueue,
} from './inbox-queue.js';
export { DEFAULT_QUEUE_NAME, type InboxJobData, type InboxJobName } from './job-data.js';
export { inboxStats } from './stats.js';
export { type InboxWorker, type InboxWorkerOptions, startInboxWorker } from './worker.js';
