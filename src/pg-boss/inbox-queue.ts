/**
 * The door's side of the inbox on pg-boss: an `InboxQueue` that writes each verified, deduplicated
 * event to a pg-boss queue and fulfils once PostgreSQL committed the row.
 */
import type { InboxEntry, InboxQueue } from 'service-webhooks/core';
import {
  checkBoss,
  checkQueueName,
  DEFAULT_QUEUE_SETTINGS,
  ensureQueues,
  eventJobId,
  jobData,
  type PgBossLike,
} from './job.js';

/**
 * Options of {@link pgBossInbox}.
 *
 * @example
 * ```ts
 * pgBossInbox({ boss, queue: 'billing-webhooks' });
 * ```
 */
export interface PgBossInboxOptions {
  /** A pg-boss instance, started (`await boss.start()`); the inbox never stops it. */
  readonly boss: PgBossLike;
  /**
   * The pg-boss queue; its dead letters go to `<queue>-dead-letters`. Made on the first event if it
   * does not exist (with the defaults a worker then overwrites with its own settings).
   * @default 'service-webhooks-inbox'
   */
  readonly queue?: string;
}

/**
 * The door's inbox on pg-boss: pass it to `createWebhooks({ inbox })`.
 *
 * @example
 * ```ts
 * const inbox = pgBossInbox({ boss });
 * const webhooks = createWebhooks({ secret, store, inbox });
 * ```
 */
export interface PgBossInbox extends InboxQueue {
  readonly boss: PgBossLike;
  /** The pg-boss queue events are written to. */
  readonly queue: string;
}

/**
 * An inbox on pg-boss (PostgreSQL) for `createWebhooks({ inbox })`. Each event becomes one job whose
 * id is a UUID derived from the queue and the event's dedup key, so a second write of one event (after
 * a first that timed out but committed) adds nothing; `enqueue` fulfils once PostgreSQL committed the
 * insert, and rejects when PostgreSQL is unreachable, so the sender is answered 503 and retries.
 *
 * @example
 * ```ts
 * import PgBoss from 'pg-boss';
 * import { createWebhooks } from 'service-webhooks';
 * import { pgBossInbox } from 'service-webhooks/pg-boss';
 * import { PostgresStore } from 'service-webhooks/postgres';
 *
 * const boss = new PgBoss(process.env.DATABASE_URL!);
 * await boss.start();
 * const webhooks = createWebhooks({ secret, store: new PostgresStore({ pool }), inbox: pgBossInbox({ boss }) });
 * ```
 */
export function pgBossInbox(options: PgBossInboxOptions): PgBossInbox {
  const what = 'pgBossInbox()';
  const boss = checkBoss(options?.boss, what);
  const queue = checkQueueName(options.queue, what);
  /** Made once; forgotten when it failed (PostgreSQL down), so the next event tries again. */
  let queues: Promise<void> | undefined;
  return {
    boss,
    queue,
    async enqueue(entry: InboxEntry, key: string): Promise<void> {
      queues ??= ensureQueues(boss, queue, DEFAULT_QUEUE_SETTINGS).catch((error: unknown) => {
        queues = undefined;
        throw error;
      });
      await queues;
      // `null` is pg-boss saying the id exists: this event is queued already, which is what was asked.
      await boss.send(queue, jobData(entry, { attempt: 1 }), { id: eventJobId(queue, key) });
    },
  };
}
