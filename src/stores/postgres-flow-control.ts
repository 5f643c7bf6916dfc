/**
 * Flow-control state on PostgreSQL: each operation one statement, on the server's clock. One row per
 * key: a rate's grants in the window (`starts`), or a key's holders and the end of their leases
 * (`holders`). Acquiring is an upsert, so concurrent workers queue on the row's lock and each sees
 * the row as the one before it left it (`ON CONFLICT DO UPDATE` reads the latest version): no grant
 * is decided on a stale count.
 *
 * A key's row goes once no slot of it is held: the release that gives back its last live slot deletes
 * it in the same statement, and the rows of keys whose holders died (their leases ended, never given
 * back) are deleted by a bounded prune an instance runs at most once a minute, from an acquire. A
 * deletion re-checks its condition on the row's latest version under the row's lock, and an acquire
 * that meets a row being deleted inserts it afresh (`ON CONFLICT` retries), so a live slot is never
 * lost. A rate's row (one per queue) stays.
 */
import { ConfigurationError, type FlowControl, type FlowGrant } from 'service-webhooks/core';
import type { PostgresQueryable } from './postgres-queryable.js';

/**
 * Options of {@link PostgresFlowControl}.
 *
 * @example
 * ```ts
 * new PostgresFlowControl({ pool, table: 'webhook_flow_control' });
 * ```
 */
export interface PostgresFlowControlOptions {
  /** A `pg` Pool (or anything with its `query`); never ended here. */
  readonly pool: PostgresQueryable;
  /**
   * The table, created by {@link PostgresFlowControl.createTable} or your migrations
   * ({@link postgresFlowControlMigration}). Lower-case letters, digits and `_`; may be schema-qualified.
   * @default 'webhook_flow_control'
   */
  readonly table?: string;
  /**
   * Create the table at the first call if it does not exist (one statement, once). `false` where the
   * role may not create tables: run {@link postgresFlowControlMigration} in your migrations.
   * @default true
   */
  readonly createTable?: boolean;
}

const DEFAULT_TABLE = 'webhook_flow_control';

function quotedTable(table: unknown): string {
  if (typeof table !== 'string' || !/^([a-z_][a-z0-9_]{0,62}\.)?[a-z_][a-z0-9_]{0,62}$/.test(table)) {
    throw new ConfigurationError(
      `PostgresFlowControl \`table\` must be a lower-case name (letters, digits, _), optionally schema-qualified; got ${JSON.stringify(table)}.`,
    );
  }
  return table
    .split('.')
    .map((part) => `"${part}"`)
    .join('.');
}

/**
 * The SQL that creates the flow-control table (idempotent), for your migrations.
 *
 * @example
 * ```ts
 * import { postgresFlowControlMigration } from 'service-webhooks/postgres';
 *
 * console.log(postgresFlowControlMigration()); // CREATE TABLE IF NOT EXISTS "webhook_flow_control" (...)
 * ```
 */
export function postgresFlowControlMigration(table: string = DEFAULT_TABLE): string {
  return `CREATE TABLE IF NOT EXISTS ${quotedTable(table)} (
  key     text PRIMARY KEY,
  -- A rate: when each grant of the window was made (ms since the epoch, the server's clock).
  starts  double precision[] NOT NULL DEFAULT '{}',
  -- A key's slots: holder -> the end of its lease (ms since the epoch).
  holders jsonb NOT NULL DEFAULT '{}',
  -- The last grant's token: how the statement tells its caller whether it was granted.
  granted text
)`;
}

const NOW = `(extract(epoch FROM clock_timestamp()) * 1000)::float8`;

/**
 * The condition on a row `f` that holds nothing: no rate's grants, and no holder whose lease has not
 * ended (but `except`, a parameter: the holder giving its slot back).
 */
function holdsNothing(except?: string): string {
  const others = except === undefined ? '' : `k <> ${except} AND `;
  return `cardinality(f.starts) = 0 AND NOT EXISTS (SELECT 1 FROM jsonb_each(f.holders) e(k, v)
    WHERE ${others}(v #>> '{}')::float8 > ${NOW})`;
}

/** How often an instance prunes at most: a statement a minute, never one per call. */
const PRUNE_INTERVAL_MS = 60_000;

/** Rows one prune deletes at most, so that it holds few locks and ends quickly; a full batch prunes again at the next acquire. */
const PRUNE_BATCH = 500;

/**
 * {@link FlowControl} on PostgreSQL. A pg-boss worker makes one on pg-boss's database; give one to an
 * SQS worker (`flowControl`), or the `PostgresStore` whose `flowControl()` makes one on its pool.
 *
 * @example
 * ```ts
 * import { PostgresFlowControl } from 'service-webhooks/postgres';
 *
 * const flow = new PostgresFlowControl({ pool });
 * await flow.createTable();
 * startSqsWorker(webhooks, { client: sqs, queueUrl, rate: { max: 10, perMs: 1_000 }, flowControl: flow });
 * ```
 */
export class PostgresFlowControl implements FlowControl {
  readonly #pool: PostgresQueryable;
  readonly #table: string;
  readonly #tableName: string;
  #created: Promise<void> | undefined;
  readonly #creates: boolean;
  /** When this instance last started a prune (`Date.now()`); 0: at its first acquire. */
  #prunedAt = 0;
  #pruning = false;

  constructor(options: PostgresFlowControlOptions) {
    if (typeof options?.pool?.query !== 'function') {
      throw new ConfigurationError('PostgresFlowControl needs a pg Pool: new PostgresFlowControl({ pool }).');
    }
    this.#pool = options.pool;
    this.#tableName = options.table ?? DEFAULT_TABLE;
    this.#table = quotedTable(this.#tableName);
    this.#creates = options.createTable !== false;
  }

  /** The table, created first unless `createTable: false`. */
  async #query<Row extends object>(text: string, values: unknown[]): Promise<{ rows: Row[] }> {
    if (this.#creates) await this.createTable();
    return this.#pool.query<Row>(text, values);
  }

  /** Create the table if it does not exist ({@link postgresFlowControlMigration}); once per instance. */
  createTable(): Promise<void> {
    this.#created ??= this.#pool.query(postgresFlowControlMigration(this.#tableName)).then(
      () => undefined,
      (error: unknown) => {
        this.#created = undefined;
        throw error;
      },
    );
    return this.#created;
  }

  /**
   * Delete the rows of keys that hold nothing (every slot given back, or its lease ended) and answer
   * how many went, at most 500 a call; rows another statement has locked are skipped. Acquires call
   * it at most once a minute per instance; call it yourself (a scheduled job) to prune a table no
   * worker acquires from any more. A rate's row is kept: its window is not in the table.
   *
   * @example
   * ```ts
   * const pruned = await new PostgresFlowControl({ pool }).prune();
   * ```
   */
  async prune(): Promise<number> {
    const { rows } = await this.#query<{ pruned: number }>(
      `WITH gone AS (
         DELETE FROM ${this.#table} AS f
          WHERE f.key = ANY(ARRAY(SELECT f.key FROM ${this.#table} AS f WHERE ${holdsNothing()}
                                   LIMIT $1 FOR UPDATE SKIP LOCKED))
            AND ${holdsNothing()}
         RETURNING 1)
       SELECT count(*)::int AS pruned FROM gone`,
      [PRUNE_BATCH],
    );
    return rows[0]?.pruned ?? 0;
  }

  /** A prune, unawaited, when the last one is a minute old (or deleted a full batch); its failure waits for the next. */
  #pruneNow(): void {
    const now = Date.now();
    if (this.#pruning || now - this.#prunedAt < PRUNE_INTERVAL_MS) return;
    this.#pruning = true;
    this.#prunedAt = now;
    this.prune().then(
      (pruned) => {
        this.#pruning = false;
        if (pruned >= PRUNE_BATCH) this.#prunedAt = 0;
      },
      () => {
        this.#pruning = false;
      },
    );
  }

  async acquireRate(key: string, max: number, windowMs: number): Promise<FlowGrant> {
    this.#pruneNow();
    const token = crypto.randomUUID();
    // `excluded.starts[1]` is this statement's now; the window keeps the grants after now - window.
    const kept = `ARRAY(SELECT s FROM unnest(f.starts) s WHERE s > excluded.starts[1] - $4::float8)`;
    const { rows } = await this.#query<{ granted: boolean; wait_ms: number | null }>(
      `INSERT INTO ${this.#table} AS f (key, starts, granted)
       SELECT $1, ARRAY[n], $2 FROM (SELECT ${NOW} AS n) c
       ON CONFLICT (key) DO UPDATE SET
         starts = CASE WHEN cardinality(${kept}) < $3::int THEN ${kept} || excluded.starts[1] ELSE ${kept} END,
         granted = CASE WHEN cardinality(${kept}) < $3::int THEN $2 ELSE f.granted END
       RETURNING f.granted = $2 AS granted,
         (SELECT min(s) FROM unnest(f.starts) s) + $4::float8 - ${NOW} AS wait_ms`,
      [key, token, max, windowMs],
    );
    return grantOf(rows[0]);
  }

  async acquireSlot(key: string, holder: string, max: number, leaseMs: number): Promise<FlowGrant> {
    this.#pruneNow();
    // `excluded.holders` is {holder: now + lease}; the others whose lease has not ended stay.
    const now = `((excluded.holders ->> $2)::float8 - $4::float8)`;
    const others = `COALESCE((SELECT jsonb_object_agg(k, v) FROM jsonb_each(f.holders) e(k, v)
                      WHERE k <> $2 AND (v #>> '{}')::float8 > ${now}), '{}'::jsonb)`;
    const { rows } = await this.#query<{ granted: boolean; wait_ms: number | null }>(
      `INSERT INTO ${this.#table} AS f (key, holders, granted)
       SELECT $1, jsonb_build_object($2::text, n + $4::float8), $2 FROM (SELECT ${NOW} AS n) c
       ON CONFLICT (key) DO UPDATE SET
         holders = CASE WHEN (SELECT count(*) FROM jsonb_each(${others})) < $3::int
           THEN ${others} || excluded.holders ELSE ${others} END,
         granted = CASE WHEN (SELECT count(*) FROM jsonb_each(${others})) < $3::int THEN $2 ELSE f.granted END
       RETURNING f.granted = $2 AS granted,
         (SELECT min((v #>> '{}')::float8) FROM jsonb_each(f.holders) e(k, v)) - ${NOW} AS wait_ms`,
      [key, holder, max, leaseMs],
    );
    return grantOf(rows[0]);
  }

  async renewSlot(key: string, holder: string, leaseMs: number): Promise<boolean> {
    const { rows } = await this.#query(
      `UPDATE ${this.#table} SET holders = jsonb_set(holders, ARRAY[$2::text], to_jsonb(${NOW} + $3::float8))
        WHERE key = $1 AND (holders ->> $2)::float8 > ${NOW}
       RETURNING 1`,
      [key, holder, leaseMs],
    );
    return rows.length === 1;
  }

  async releaseSlot(key: string, holder: string): Promise<void> {
    // One statement: the row goes when no other live slot is left in it, else the holder leaves it.
    // The two are exclusive (`gone` is read before the update scans), so the row is changed once.
    await this.#query(
      `WITH gone AS (
         DELETE FROM ${this.#table} AS f
          WHERE f.key = $1 AND ${holdsNothing('$2')}
         RETURNING 1)
       UPDATE ${this.#table} SET holders = holders - $2::text
        WHERE key = $1 AND NOT EXISTS (SELECT 1 FROM gone)`,
      [key, holder],
    );
  }
}

function grantOf(row: { granted: boolean; wait_ms: number | null } | undefined): FlowGrant {
  if (row?.granted) return { granted: true };
  return { granted: false, waitMs: Math.max(1, Math.ceil(Number(row?.wait_ms ?? 1))) };
}
