/**
 * The dead-letter list of a pg-boss inbox (the `<queue>-dead-letters` queue, which no worker takes
 * from): list, inspect, replay, remove; and the inbox's figures.
 */
import type { DeadLetter, InboxAdmin, Replay } from 'service-webhooks/core';
import { DeadLetterError } from 'service-webhooks/core';
import { checkPage, replayEach, replayIdOf } from '../inbox/dead-letters.js';
import {
  checkBoss,
  checkQueueName,
  DEFAULT_QUEUE_SETTINGS,
  deadLetterQueueOf,
  ensureQueues,
  entryOf,
  type InboxJobData,
  jobData,
  type PgBossJob,
  type PgBossLike,
  replayJobId,
} from './job.js';
import { checkSchema, jobTable, pgBossInboxStats } from './stats.js';

/**
 * Options of {@link pgBossInboxAdmin}: where the inbox is.
 *
 * @example
 * ```ts
 * pgBossInboxAdmin({ boss, queue: 'billing-webhooks', schema: 'pgboss' });
 * ```
 */
export interface PgBossInboxAdminOptions {
  /** A started pg-boss instance; the admin never stops it. */
  readonly boss: PgBossLike;
  /** @default 'service-webhooks-inbox' */
  readonly queue?: string;
  /** pg-boss's schema (its `schema` option). @default 'pgboss' */
  readonly schema?: string;
}

/**
 * The tools of a pg-boss inbox (see `InboxAdmin`).
 *
 * @example
 * ```ts
 * const admin = pgBossInboxAdmin({ boss });
 * for (const letter of (await admin.list()).items) await admin.replay(letter.jobId);
 * ```
 */
export interface PgBossInboxAdmin extends InboxAdmin {
  readonly engine: 'pg-boss';
  /** The inbox queue, and its dead letters' queue. */
  readonly queue: string;
  readonly deadLetterQueue: string;
}

interface DeadLetterRow {
  readonly id: string;
  readonly data: InboxJobData | null;
  readonly output: unknown;
  readonly created_on: Date | string;
}

/**
 * Open the figures and dead-letter list of a pg-boss inbox. Dead letters are the jobs of
 * `<queue>-dead-letters`: those the worker wrote (the last failure, or a poison entry, with the cause)
 * and those pg-boss moved there itself (an event whose workers kept dying, `maxCrashes`).
 *
 * @example
 * ```ts
 * import { pgBossInboxAdmin } from 'service-webhooks/pg-boss';
 *
 * const admin = pgBossInboxAdmin({ boss });
 * console.log(await admin.stats());
 * await admin.replayAll();
 * ```
 */
export function pgBossInboxAdmin(options: PgBossInboxAdminOptions): PgBossInboxAdmin {
  const what = 'pgBossInboxAdmin()';
  const boss = checkBoss(options?.boss, what);
  const queue = checkQueueName(options.queue, what);
  const schema = checkSchema(options.schema, what);
  const table = jobTable(schema);
  const deadLetterQueue = deadLetterQueueOf(queue);

  const read = async (jobId: string): Promise<DeadLetter | undefined> => {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(jobId)) return undefined;
    const { rows } = await boss
      .getDb()
      .executeSql(
        `SELECT id, data, output, created_on FROM ${table} WHERE name = $1 AND id = $2 AND state = 'created'`,
        [deadLetterQueue, jobId],
      );
    const row = rows[0] as DeadLetterRow | undefined;
    return row && toDeadLetter(row);
  };

  const deadLettered = async (jobId: string): Promise<DeadLetter> => {
    const letter = await read(jobId);
    if (!letter) {
      const job = /^[0-9a-f-]{36}$/i.test(jobId)
        ? ((await boss.getJobById(queue, jobId)) as PgBossJob | null)
        : null;
      throw new DeadLetterError(jobId, job?.state);
    }
    return letter;
  };

  const replay = async (letter: DeadLetter): Promise<Replay> => {
    const replayId = replayIdOf(letter.jobId, letter.failedAt ?? letter.enqueuedAt);
    const jobId = replayJobId(queue, replayId);
    await ensureQueues(boss, queue, DEFAULT_QUEUE_SETTINGS);
    // Written before the dead letter is removed: a crash in between leaves both, and replaying it
    // again writes the same job id (pg-boss adds nothing) and the same replay id (handlers run once).
    await boss.send(
      queue,
      jobData(letter.entry, { attempt: 1, replay: { id: replayId, of: letter.jobId } }),
      {
        id: jobId,
      },
    );
    await boss.deleteJob(deadLetterQueue, letter.jobId);
    return { jobId, replayId, eventId: letter.eventId, replayOf: letter.jobId };
  };

  const page = async (offset: number, limit: number): Promise<DeadLetter[]> => {
    const { rows } = await boss.getDb().executeSql(
      `SELECT id, data, output, created_on FROM ${table}
        WHERE name = $1 AND state = 'created'
        ORDER BY created_on DESC, id OFFSET $2 LIMIT $3`,
      [deadLetterQueue, offset, limit],
    );
    return (rows as DeadLetterRow[]).map(toDeadLetter);
  };

  return {
    engine: 'pg-boss',
    queue,
    deadLetterQueue,
    stats: () => pgBossInboxStats(boss, queue, schema),
    async list(range) {
      const { offset, limit } = checkPage(range);
      const [count, items] = await Promise.all([
        boss
          .getDb()
          .executeSql(`SELECT count(*) AS total FROM ${table} WHERE name = $1 AND state = 'created'`, [
            deadLetterQueue,
          ]),
        page(offset, limit),
      ]);
      return { items, total: Number((count.rows[0] as { total: string }).total), offset };
    },
    get: read,
    async replay(jobId) {
      return replay(await deadLettered(jobId));
    },
    replayAll: ({ limit } = {}) =>
      replayEach(
        () => page(0, 100),
        (letter) => letter.jobId,
        replay,
        limit,
      ),
    async remove(jobId) {
      await deadLettered(jobId);
      await boss.deleteJob(deadLetterQueue, jobId);
    },
    async close() {
      // Nothing of its own to close: the pg-boss instance is the application's.
    },
  };
}

/** A dead letter as the worker wrote it, or as pg-boss moved it (its `output` then holds the cause). */
function toDeadLetter(row: DeadLetterRow): DeadLetter {
  const data = (row.data ?? {}) as InboxJobData;
  const record = data.deadLetter;
  const event = data.event as Partial<InboxJobData['event']> | undefined;
  const createdOn = new Date(row.created_on).getTime();
  const output = row.output as { value?: { message?: unknown }; message?: unknown } | null;
  const pgBossReason = output?.value?.message ?? output?.message;
  return {
    jobId: row.id,
    eventId: typeof event?.id === 'string' ? event.id : '',
    eventType: typeof event?.type === 'string' ? event.type : '',
    entry: entryOf(data),
    attempts: record?.attempts ?? (typeof data.attempt === 'number' ? data.attempt : 1),
    lastError:
      record?.lastError ??
      `abandoned: every worker that ran it stopped (crash, out of memory), and pg-boss gave up${typeof pgBossReason === 'string' ? ` (${pgBossReason})` : ''}`,
    stacktrace: record?.stacktrace ?? [],
    receivedAt: data.receivedAt,
    enqueuedAt: record?.enqueuedAt ?? createdOn,
    lastAttemptAt: record?.lastAttemptAt,
    failedAt: record?.failedAt ?? createdOn,
    replayOf: data.replay?.of,
  };
}
