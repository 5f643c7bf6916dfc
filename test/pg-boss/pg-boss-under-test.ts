/**
 * The pg-boss inbox as inboxConformanceSuite drives it: the door's `pgBossInbox`, `pgBossInboxAdmin`
 * and in-process `startPgBossWorker`s on one started pg-boss, each inbox on a queue of its own.
 */
import {
  deadLetterQueueOf,
  eventJobId,
  type PgBossInbox,
  pgBossInbox,
  pgBossInboxAdmin,
  startPgBossWorker,
} from 'service-webhooks/pg-boss';
import type { InboxUnderTest, WorkerUnderTest } from 'service-webhooks/testing';
import { type TestBoss, uniqueQueue } from './support.js';

/**
 * A fresh pg-boss inbox for one conformance test. A worker's jobs expire after the suite's
 * `recoveryMs` (in whole seconds, pg-boss's unit), and the test pg-boss looks for expired jobs every
 * second, so a crashed worker's job is handed out again within about `recoveryMs + 1 s`. `down` is a
 * pg-boss whose PostgreSQL was cut off: the door on it must refuse events.
 *
 * @example
 * ```ts
 * inboxConformanceSuite({ name: 'pg-boss', describe, test, createInbox: () => pgBossUnderTest(boss, schema, down) });
 * ```
 */
export async function pgBossUnderTest(
  boss: TestBoss,
  schema: string,
  down: TestBoss,
): Promise<InboxUnderTest> {
  const queue = uniqueQueue('conformance');
  const inbox = pgBossInbox({ boss, queue });
  const admin = pgBossInboxAdmin({ boss, queue, schema });
  const closers: (() => Promise<void>)[] = [];
  const underTest = {
    inbox,
    admin,
    async startWorker(webhooks, options) {
      const running = await startPgBossWorker(webhooks, {
        boss,
        queue,
        schema,
        attempts: options.attempts,
        backoff: options.backoff,
        ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
        expireInSeconds: Math.max(1, Math.ceil(options.recoveryMs / 1000)),
        pollIntervalMs: 100,
        monitor: false,
      });
      let closed = false;
      closers.push(async () => {
        if (!closed) await running.close();
      });
      const worker: WorkerUnderTest = {
        async close() {
          closed = true;
          await running.close();
        },
        async crash() {
          // Forced: nothing waits for the running handlers and nothing is written to pg-boss for
          // them, so their jobs stay active until pg-boss expires them, as after SIGKILL.
          closed = true;
          await running.close(true);
        },
      };
      return worker;
    },
    async enqueueRaw(entry: unknown, key: string) {
      // Through the door first, so the queues exist; then the job's data replaced as another
      // producer might have written it.
      await inbox.enqueue({ event: {}, receivedAt: 0, secretIndex: 0 } as never, key);
      await boss
        .getDb()
        .executeSql(`UPDATE ${schema}.job SET data = $3::jsonb WHERE name = $1 AND id = $2`, [
          queue,
          eventJobId(queue, key),
          JSON.stringify(entry ?? null),
        ]);
    },
    unreachableInbox(): PgBossInbox {
      return pgBossInbox({ boss: down, queue });
    },
    async close() {
      for (const close of closers.splice(0).reverse()) await close();
      await boss
        .getDb()
        .executeSql(`DELETE FROM ${schema}.job WHERE name IN ($1, $2)`, [queue, deadLetterQueueOf(queue)]);
    },
  } satisfies InboxUnderTest & { unreachableInbox(): PgBossInbox };
  return underTest;
}
