/**
 * An idempotency store kept in PostgreSQL, written as a user of service-webhooks would write one: it
 * imports only the public package, and it passes `storeConformanceSuite` (test/postgres-store.test.ts).
 *
 * One row per key. Claim, complete and renew are each a single `INSERT ... ON CONFLICT DO UPDATE ...
 * WHERE`, so the database decides atomically who holds the event, including the takeover of a lease
 * left by a crashed worker (the read-then-write race to avoid): the conflicting row is locked and the
 * WHERE is checked against its latest version. `complete` and `renew` succeed for the token that holds
 * the row (even after its lease ended) or when no live row exists, so a worker whose lease expired
 * finishes its work unless another attempt took the event meanwhile, and never touches the new owner's
 * row. Times come from the database's clock, so application servers with skewed clocks agree.
 */
import {
  type ClaimResult,
  type CompleteResult,
  ConfigurationError,
  type IdempotencyStore,
  type RenewResult,
} from 'service-webhooks';

/** What the store needs from `pg`: a `Pool` (or a `Client`) fits. */
export interface Queryable {
  query<Row extends object>(
    text: string,
    values?: unknown[],
  ): Promise<{ rows: Row[]; rowCount: number | null }>;
}

/**
 * Options of {@link PostgresStore}.
 *
 * @example
 * ```ts
 * new PostgresStore({ pool: new pg.Pool({ connectionString: process.env.DATABASE_URL }), table: 'webhook_events' });
 * ```
 */
export interface PostgresStoreOptions {
  /** A `pg` Pool. Size it for your concurrency: each store call holds a connection for one statement. */
  pool: Queryable;
  /**
   * The table, created by {@link PostgresStore.createTable}. Letters, digits and `_` only.
   * @default 'webhook_events'
   */
  table?: string;
}

/**
 * An `IdempotencyStore` on PostgreSQL.
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * import { createWebhooks } from 'service-webhooks';
 * import { PostgresStore } from './postgres-store.js';
 *
 * const store = new PostgresStore({ pool: new pg.Pool({ connectionString: process.env.DATABASE_URL }) });
 * await store.createTable();
 * setInterval(() => void store.purgeExpired(), 60 * 60 * 1000).unref();
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store });
 * ```
 */
export class PostgresStore implements IdempotencyStore {
  readonly #pool: Queryable;
  readonly #table: string;

  constructor(options: PostgresStoreOptions) {
    const table = options.table ?? 'webhook_events';
    // The name is spliced into SQL (identifiers cannot be bound as parameters), so allow only a safe shape.
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(table)) {
      throw new ConfigurationError(
        `PostgresStore \`table\` must match /^[a-z_][a-z0-9_]*$/; got ${JSON.stringify(table)}.`,
      );
    }
    this.#pool = options.pool;
    this.#table = `"${table}"`;
  }

  /** Create the table if it does not exist. */
  async createTable(): Promise<void> {
    await this.#pool.query(`
      CREATE TABLE IF NOT EXISTS ${this.#table} (
        -- The store key (dedup scope and event id); the column's name predates the scope.
        event_id   text PRIMARY KEY,
        -- The owning attempt while in progress; NULL once completed, so no token can match a done event.
        token      text,
        state      text NOT NULL CHECK (state IN ('in_progress', 'completed')),
        -- End of the lease while in progress, end of the memory once completed.
        expires_at timestamptz NOT NULL
      )`);
  }

  async claim(key: string, token: string, leaseMs: number): Promise<ClaimResult> {
    // Rows the INSERT wrote are invisible to the outer SELECT (one snapshot), hence the UNION: either
    // the claim's own row, or the row that blocked it.
    const { rows } = await this.#pool.query<{ result: string }>(
      `WITH claimed AS (
         INSERT INTO ${this.#table} AS e (event_id, token, state, expires_at)
         VALUES ($1, $2, 'in_progress', clock_timestamp() + $3 * interval '1 millisecond')
         ON CONFLICT (event_id) DO UPDATE
           SET token = EXCLUDED.token, state = 'in_progress', expires_at = EXCLUDED.expires_at
           WHERE e.expires_at <= clock_timestamp()
         RETURNING 1
       )
       SELECT 'claimed' AS result FROM claimed
       UNION ALL
       SELECT state FROM ${this.#table} WHERE event_id = $1 AND NOT EXISTS (SELECT 1 FROM claimed)`,
      [key, token, Math.ceil(leaseMs)],
    );
    const result = rows[0]?.result;
    if (result === 'claimed' || result === 'completed') return result;
    // 'in_progress', or no row visible: a concurrent claim committed after this statement's snapshot
    // began. Either way another attempt owns the event now, and "in progress" is the safe answer.
    return 'in_progress';
  }

  async complete(key: string, token: string, ttlMs: number): Promise<CompleteResult> {
    // The token column is NULL once completed, so completing twice with one token finds no holder.
    const { rowCount } = await this.#pool.query(
      `INSERT INTO ${this.#table} AS e (event_id, token, state, expires_at)
       VALUES ($1, NULL, 'completed', clock_timestamp() + $3 * interval '1 millisecond')
       ON CONFLICT (event_id) DO UPDATE
         SET token = NULL, state = 'completed', expires_at = EXCLUDED.expires_at
         WHERE (e.token = $2 AND e.state = 'in_progress') OR e.expires_at <= clock_timestamp()`,
      [key, token, Math.ceil(ttlMs)],
    );
    return rowCount === 1 ? 'completed' : 'lost';
  }

  async renew(key: string, token: string, leaseMs: number): Promise<RenewResult> {
    const { rowCount } = await this.#pool.query(
      `INSERT INTO ${this.#table} AS e (event_id, token, state, expires_at)
       VALUES ($1, $2, 'in_progress', clock_timestamp() + $3 * interval '1 millisecond')
       ON CONFLICT (event_id) DO UPDATE
         SET token = EXCLUDED.token, state = 'in_progress', expires_at = EXCLUDED.expires_at
         WHERE (e.token = $2 AND e.state = 'in_progress') OR e.expires_at <= clock_timestamp()`,
      [key, token, Math.ceil(leaseMs)],
    );
    return rowCount === 1 ? 'renewed' : 'lost';
  }

  async release(key: string, token: string): Promise<void> {
    await this.#pool.query(
      `DELETE FROM ${this.#table} WHERE event_id = $1 AND token = $2 AND state = 'in_progress'`,
      [key, token],
    );
  }

  /**
   * Delete rows whose lease or memory has ended. Correctness never depends on it (an expired row is
   * claimable as it is); run it now and then to keep the table small. Answers how many rows went.
   */
  async purgeExpired(): Promise<number> {
    const { rowCount } = await this.#pool.query(
      `DELETE FROM ${this.#table} WHERE expires_at <= clock_timestamp()`,
    );
    return rowCount ?? 0;
  }
}
