/**
 * `service-webhooks/postgres`: an idempotency store shared by every process that receives deliveries,
 * kept in one PostgreSQL table through a `pg` Pool the application owns.
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * import { createWebhooks } from 'service-webhooks';
 * import { PostgresStore } from 'service-webhooks/postgres';
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, connectionTimeoutMillis: 1_000 });
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: new PostgresStore({ pool }) });
 * ```
 * @packageDocumentation
 */
import {
  type ClaimResult,
  type CompleteResult,
  ConfigurationError,
  type IdempotencyStore,
  type RenewResult,
  StoreUnavailableError,
} from 'service-webhooks';
import { keyEncoder, wholeMilliseconds } from './store-encoding.js';

/** `%` and unpaired surrogates escaped: `pg` sends strings as UTF-8. */
const encodeKey = keyEncoder();

/**
 * What the store needs from `pg`: a `Pool` fits (so does a `Client` or a `PoolClient`, for tests and
 * migrations). Typed structurally, so this subpath needs neither `pg` nor `@types/pg` to load.
 *
 * @example
 * ```ts
 * const pool: PostgresQueryable = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * ```
 */
export interface PostgresQueryable {
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
  /**
   * A `pg` Pool the application created and owns: the store never ends it. Size it for your
   * concurrency (each store call holds a connection for one statement), and make it fail fast while
   * PostgreSQL is unreachable: `connectionTimeoutMillis: 1_000`, and a `statement_timeout` (or
   * `query_timeout`) of about a second, within the receiver's `storeTimeoutMs` (2 s by default).
   */
  pool: PostgresQueryable;
  /**
   * The table, created by {@link PostgresStore.createTable} or by your migrations with
   * {@link postgresStoreMigration}. Lower-case letters, digits and `_`, at most 63 characters.
   * @default 'webhook_events'
   */
  table?: string;
}

const DEFAULT_TABLE = 'webhook_events';

/** The table name, checked: it is spliced into SQL (identifiers cannot be bound as parameters). */
function quotedTable(table: unknown): string {
  if (typeof table !== 'string' || !/^[a-z_][a-z0-9_]{0,62}$/.test(table)) {
    throw new ConfigurationError(
      `PostgresStore \`table\` must match /^[a-z_][a-z0-9_]{0,62}$/; got ${JSON.stringify(table)}.`,
    );
  }
  return `"${table}"`;
}

/**
 * The SQL that creates the store's table (idempotent: `CREATE TABLE IF NOT EXISTS`), to put in your
 * migrations when the application's database role may not create tables. {@link PostgresStore.createTable}
 * runs the same statement.
 *
 * One row per key: `event_id` (text, primary key) holds the store key (dedup scope and event id),
 * `token` the owning delivery attempt (NULL once completed), `state` is `in_progress` or `completed`,
 * and `expires_at` (timestamptz) ends the lease or the memory.
 *
 * @example
 * ```ts
 * import { writeFileSync } from 'node:fs';
 * import { postgresStoreMigration } from 'service-webhooks/postgres';
 *
 * writeFileSync('migrations/0042_webhook_events.sql', postgresStoreMigration('webhook_events'));
 * ```
 */
export function postgresStoreMigration(table: string = DEFAULT_TABLE): string {
  return `CREATE TABLE IF NOT EXISTS ${quotedTable(table)} (
  -- The store key (dedup scope and event id); the column's name predates the scope.
  event_id   text PRIMARY KEY,
  -- The owning attempt while in progress; NULL once completed, so no token can match a done event.
  token      text,
  state      text NOT NULL CHECK (state IN ('in_progress', 'completed')),
  -- End of the lease while in progress, end of the memory once completed.
  expires_at timestamptz NOT NULL
);
`;
}

/**
 * The idempotency store on PostgreSQL, for several processes or machines that share a database.
 *
 * One row per key. Claim, complete and renew are each a single `INSERT ... ON CONFLICT DO UPDATE ...
 * WHERE`, so the database decides atomically who holds the event, including the takeover of a lease
 * left by a crashed worker (never a read-then-write race): the conflicting row is locked and the WHERE
 * is checked against its latest version. `complete` and `renew` succeed for the token that holds the
 * row (even after its lease ended) or when no live row exists, so a worker whose lease ended finishes
 * its work unless another attempt took the event meanwhile, and never touches the new owner's row.
 * Times come from the database's clock (`clock_timestamp()`), so application servers with skewed
 * clocks agree. Ended rows are claimable as they are; {@link PostgresStore.purgeExpired} deletes them.
 *
 * Every failed call throws `StoreUnavailableError` with the `pg` error as `cause`: the sender is
 * answered 503 `store_unavailable` and retries later.
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * import { createWebhooks } from 'service-webhooks';
 * import { PostgresStore } from 'service-webhooks/postgres';
 *
 * const store = new PostgresStore({ pool: new pg.Pool({ connectionString: process.env.DATABASE_URL }) });
 * await store.createTable();
 * setInterval(() => void store.purgeExpired().catch(console.error), 60 * 60 * 1000).unref();
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store });
 * ```
 */
export class PostgresStore implements IdempotencyStore {
  readonly #pool: PostgresQueryable;
  readonly #tableName: string;
  readonly #table: string;

  constructor(options: PostgresStoreOptions) {
    const pool: unknown = options?.pool;
    if (typeof (pool as Partial<PostgresQueryable> | undefined)?.query !== 'function') {
      throw new ConfigurationError(
        'PostgresStore needs a pg Pool: new PostgresStore({ pool: new pg.Pool({ connectionString: process.env.DATABASE_URL }) }).',
      );
    }
    const table = options.table ?? DEFAULT_TABLE;
    this.#table = quotedTable(table);
    this.#tableName = table;
    this.#pool = pool as PostgresQueryable;
  }

  /**
   * Create the table if it does not exist ({@link postgresStoreMigration}); errors from `pg` are
   * thrown as they are.
   *
   * @example
   * ```ts
   * await new PostgresStore({ pool }).createTable();
   * ```
   */
  async createTable(): Promise<void> {
    await this.#pool.query(postgresStoreMigration(this.#tableName));
  }

  async claim(key: string, token: string, leaseMs: number): Promise<ClaimResult> {
    // Rows the INSERT wrote are invisible to the outer SELECT (one snapshot), hence the UNION: either
    // the claim's own row, or the row that blocked it.
    const { rows } = await this.#query<{ result: string }>(
      'claim',
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
      [encodeKey(key), token, wholeMilliseconds(leaseMs)],
    );
    const result = rows[0]?.result;
    if (result === 'claimed' || result === 'completed') return result;
    // 'in_progress', or no row visible: a concurrent claim committed after this statement's snapshot
    // began. Either way another attempt owns the event now, and "in progress" is the safe answer.
    return 'in_progress';
  }

  async complete(key: string, token: string, ttlMs: number): Promise<CompleteResult> {
    // The token column is NULL once completed, so completing twice with one token finds no holder.
    const { rowCount } = await this.#query(
      'complete',
      `INSERT INTO ${this.#table} AS e (event_id, token, state, expires_at)
       VALUES ($1, NULL, 'completed', clock_timestamp() + $3 * interval '1 millisecond')
       ON CONFLICT (event_id) DO UPDATE
         SET token = NULL, state = 'completed', expires_at = EXCLUDED.expires_at
         WHERE (e.token = $2 AND e.state = 'in_progress') OR e.expires_at <= clock_timestamp()`,
      [encodeKey(key), token, wholeMilliseconds(ttlMs)],
    );
    return rowCount === 1 ? 'completed' : 'lost';
  }

  async renew(key: string, token: string, leaseMs: number): Promise<RenewResult> {
    const { rowCount } = await this.#query(
      'renew',
      `INSERT INTO ${this.#table} AS e (event_id, token, state, expires_at)
       VALUES ($1, $2, 'in_progress', clock_timestamp() + $3 * interval '1 millisecond')
       ON CONFLICT (event_id) DO UPDATE
         SET token = EXCLUDED.token, state = 'in_progress', expires_at = EXCLUDED.expires_at
         WHERE (e.token = $2 AND e.state = 'in_progress') OR e.expires_at <= clock_timestamp()`,
      [encodeKey(key), token, wholeMilliseconds(leaseMs)],
    );
    return rowCount === 1 ? 'renewed' : 'lost';
  }

  async release(key: string, token: string): Promise<void> {
    await this.#query(
      'release',
      `DELETE FROM ${this.#table} WHERE event_id = $1 AND token = $2 AND state = 'in_progress'`,
      [encodeKey(key), token],
    );
  }

  /**
   * Delete rows whose lease or memory has ended, and answer how many went. Correctness never depends
   * on it (an ended row is claimable as it is); run it now and then to keep the table small. Errors
   * from `pg` are thrown as they are.
   *
   * @example
   * ```ts
   * setInterval(() => void store.purgeExpired().catch(console.error), 60 * 60 * 1000).unref();
   * ```
   */
  async purgeExpired(): Promise<number> {
    const { rowCount } = await this.#pool.query(
      `DELETE FROM ${this.#table} WHERE expires_at <= clock_timestamp()`,
    );
    return rowCount ?? 0;
  }

  /**
   * The `event_id` that holds the store key `key`, as the store writes it (for inspection and tests).
   * Only `%` and unpaired UTF-16 surrogates are escaped (PostgreSQL text is UTF-8, where unpaired
   * surrogates cannot be written), so distinct keys stay distinct.
   *
   * @example
   * ```ts
   * await pool.query('SELECT state, expires_at FROM webhook_events WHERE event_id = $1', [store.keyFor(key)]);
   * ```
   */
  keyFor(key: string): string {
    return encodeKey(key);
  }

  async #query<Row extends object>(operation: string, text: string, values: unknown[]) {
    try {
      return await this.#pool.query<Row>(text, values);
    } catch (cause) {
      const reason = cause instanceof Error ? cause.message : String(cause);
      throw new StoreUnavailableError(`PostgresStore could not ${operation} the event: ${reason}`, {
        cause,
      });
    }
  }
}
