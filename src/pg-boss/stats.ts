/** What a pg-boss inbox holds, as the figures every engine reports (`InboxStats`), in one query. */
import type { InboxStats } from 'service-webhooks/core';
import { ConfigurationError } from 'service-webhooks/core';
import { deadLetterQueueOf, type PgBossLike } from './job.js';

/**
 * pg-boss's schema (its `schema` option): the figures are read from its job table with one query,
 * since its own counting calls differ between versions and cannot tell waiting from delayed.
 *
 * @example
 * ```ts
 * const schema = checkSchema(options.schema, 'pgBossInboxAdmin()'); // 'pgboss' by default
 * ```
 */
export function checkSchema(schema: unknown, what: string): string {
  if (schema === undefined) return 'pgboss';
  if (typeof schema !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) {
    throw new ConfigurationError(
      `${what} \`schema\` must be the pg-boss schema's name (letters, digits, _); got ${JSON.stringify(schema)}.`,
    );
  }
  return schema;
}

/**
 * The job table of a schema `checkSchema` passed, as SQL: quoted, so that the name can only ever be a
 * name, and lower-cased, since pg-boss writes it unquoted and PostgreSQL folds an unquoted name to
 * lower case (`MyBoss` is the schema `myboss`).
 *
 * @example
 * ```ts
 * const sql = `SELECT count(*) FROM ${jobTable(checkSchema(options.schema, 'pgBossInboxAdmin()'))}`;
 * // SELECT count(*) FROM "pgboss".job
 * ```
 */
export function jobTable(checkedSchema: string): string {
  return `"${checkedSchema.toLowerCase()}".job`;
}

interface CountRow {
  readonly name: string;
  readonly state: string;
  readonly later: boolean;
  readonly count: string | number;
  readonly throttled: string | number;
  readonly rate_limited: string | number;
  readonly oldest: string | number | null;
}

/**
 * Read the figures of an inbox queue: `waiting` is created or recovered jobs due now, `delayed` those
 * due later (a retry, a deferral), `active` the running ones, `deadLettered` the dead-letter queue's
 * jobs, and `oldestWaitingMs` from the door's `receivedAt` of the oldest job due now.
 *
 * `schema` is pg-boss's `schema` option (default `pgboss`), checked as every entry point checks it:
 * anything but a name throws a `ConfigurationError` before any SQL is sent.
 *
 * @example
 * ```ts
 * const stats = await pgBossInboxStats(boss, 'service-webhooks-inbox');
 * ```
 */
export async function pgBossInboxStats(
  boss: PgBossLike,
  queue: string,
  schema?: string,
): Promise<InboxStats> {
  const table = jobTable(checkSchema(schema, 'pgBossInboxStats()'));
  const deadLetters = deadLetterQueueOf(queue);
  const { rows } = await boss.getDb().executeSql(
    `SELECT name, state::text AS state, start_after > now() AS later, count(*) AS count,
            count(*) FILTER (WHERE data->>'throttled' IN ('rate', 'key', 'unavailable')) AS throttled,
            count(*) FILTER (WHERE data->>'throttled' = 'downstream') AS rate_limited,
            min(CASE WHEN jsonb_typeof(data->'receivedAt') = 'number' THEN (data->>'receivedAt')::numeric END) AS oldest
       FROM ${table}
      WHERE name IN ($1, $2) AND state < 'completed'
      GROUP BY 1, 2, 3`,
    [queue, deadLetters],
  );
  let waiting = 0;
  let active = 0;
  let delayed = 0;
  let deadLettered = 0;
  let throttled = 0;
  let rateLimited = 0;
  let oldest: number | undefined;
  for (const row of rows as CountRow[]) {
    const count = Number(row.count);
    if (row.name === deadLetters) deadLettered += count;
    else if (row.state === 'active') active += count;
    else if (row.later) {
      delayed += count;
      // A throttled job counts while its time is ahead; once due it is waiting like any other.
      throttled += Number(row.throttled);
      rateLimited += Number(row.rate_limited);
    } else {
      waiting += count;
      if (row.oldest !== null) oldest = Math.min(oldest ?? Number.POSITIVE_INFINITY, Number(row.oldest));
    }
  }
  return {
    waiting,
    active,
    delayed,
    depth: waiting + active + delayed,
    deadLettered,
    oldestWaitingMs: oldest === undefined ? undefined : Math.max(0, Date.now() - oldest),
    throttled,
    rateLimited,
  };
}
