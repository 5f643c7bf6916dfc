/**
 * What a PostgreSQL test file may take of a developer's database: the connections it opens at once,
 * checked before it opens them, so that a database with other clients fails the file with what it
 * needs rather than PostgreSQL's "sorry, too many clients already" in the middle of a run.
 */
import pg from 'pg';

/**
 * Throw, saying exactly what is needed and what is there, unless the database at `connectionString`
 * can give `needed` more connections now.
 *
 * @example
 * ```ts
 * beforeAll(() => checkConnectionBudget(connectionString, 2 * POOL_WIDTH, 'postgres-store.test.ts'));
 * ```
 */
export async function checkConnectionBudget(
  connectionString: string,
  needed: number,
  file: string,
): Promise<void> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    const { rows } = await client.query<{ max: number; reserved: number; superuser: boolean; used: number }>(
      `SELECT current_setting('max_connections')::int AS max,
              current_setting('superuser_reserved_connections')::int AS reserved,
              (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS superuser,
              (SELECT count(*)::int FROM pg_stat_activity WHERE backend_type = 'client backend') AS used`,
    );
    const { max, reserved, superuser, used } = rows[0]!;
    // This check's own connection is counted in `used` and is gone before the file opens its pools.
    const others = used - 1;
    const free = max - (superuser ? 0 : reserved) - others;
    if (free < needed) {
      throw new Error(
        `${file} needs ${needed} PostgreSQL connections at once; the database at ${connectionString.replace(/:[^:@/]*@/, ':***@')} has ${free} free (max_connections ${max}${superuser ? '' : `, ${reserved} reserved for superusers`}, ${others} used by other clients). Close some of those clients or raise max_connections.`,
      );
    }
  } finally {
    await client.end();
  }
}
