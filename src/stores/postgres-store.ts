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
  type BackgroundErrorListener,
  type ClaimResult,
  type CompleteResult,
  ConfigurationError,
  type FlowControl,
  type IdempotencyStore,
  type RenewResult,
  type ResourceClaimResult,
  StoreUnavailableError,
} from 'service-webhooks/core';
import { BackgroundErrors } from './background-errors.js';
import { PostgresFlowControl } from './postgres-flow-control.js';
import type { PostgresQueryable } from './postgres-queryable.js';
import { keyEncoder, wholeMilliseconds } from './store-encoding.js';

export {
  PostgresFlowControl,
  type PostgresFlowControlOptions,
  postgresFlowControlMigration,
} from './postgres-flow-control.js';
export type { PostgresQueryable } from './postgres-queryable.js';

/**
 * `%`, NUL and unpaired surrogates escaped: PostgreSQL `text` refuses NUL (every claim of such an id
 * would fail, and the event be answered 503 forever), and `pg` sends strings as UTF-8.
 */
const encodeKey = keyEncoder('\u0000');

/**
 * Statements one claim may take to find a settled answer: a claim that did not take the event reads the
 * row, and claims again only when the row was gone by then (released, or just expired). A row that
 * keeps changing hands that fast is busy: after this many rounds the claim answers 'in_progress'.
 */
const CLAIM_ROUNDS = 3;

/**
 * The end of a lease or memory of `$3` milliseconds, counted from the moment the expression is evaluated.
 * Every write sets it in its DO UPDATE rather than taking EXCLUDED's: EXCLUDED's clock_timestamp() was
 * read when the VALUES row was built, before the statement waited for a concurrent writer's row lock,
 * so a call that waited would have written a lease (or TTL) shortened by the wait, possibly ended
 * before the call answered. The store checker (checkStore) found it: a claim that answered 'claimed'
 * and, a moment later, another claim that took the same event over.
 */
const FROM_NOW = "clock_timestamp() + $3 * interval '1 millisecond'";

/**
 * Milliseconds left of the row's lease, whole and at least 1 (a lease read as live has some left).
 * `ceil` so that a sender told to come back then finds the lease ended.
 */
const LEFT_MS = 'greatest(1, ceil(extract(epoch FROM lease_expires_at - clock_timestamp()) * 1000))::float8';

/** A row of claimResource's statements. */
type ResourceRow = { claimed?: boolean; watermark?: number | null; left_ms: number };

function busy(leftMs: number): ResourceClaimResult {
  return { outcome: 'busy', retryAfterMs: Math.max(1, Math.ceil(Number(leftMs))) };
}

/** What PostgresStore listens to, when the pool has it: a `pg.Pool` or `pg.Client` is an EventEmitter. */
type ErrorEmitter = { on(event: 'error', listener: (error: unknown) => void): unknown };

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
  /**
   * The table of resource leases and watermarks, used only by receivers with the `ordering` option,
   * created beside `table` by the same migration. Same rules as `table`.
   * @default `${table}_resources`
   */
  resourceTable?: string;
}

const DEFAULT_TABLE = 'webhook_events';
const RESOURCE_TABLE_SUFFIX = '_resources';

/** Names PostgreSQL accepts unquoted-alike and the store splices into SQL. */
const TABLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * The resource table's name: the one given, or `table` + `_resources` when that still fits in 63
 * characters. `undefined` when it does not: a store on a table named that long serves every receiver
 * without `ordering`, and the ordering operations ask for `resourceTable`.
 */
function resourceTableFor(table: string, resourceTable: unknown): string | undefined {
  if (resourceTable !== undefined) return resourceTable as string;
  const name = table + RESOURCE_TABLE_SUFFIX;
  return TABLE_NAME.test(name) ? name : undefined;
}

/** The table name, checked: it is spliced into SQL (identifiers cannot be bound as parameters). */
function quotedTable(table: unknown, option = 'table'): string {
  if (typeof table !== 'string' || !TABLE_NAME.test(table)) {
    throw new ConfigurationError(
      `PostgresStore \`${option}\` must match /^[a-z_][a-z0-9_]{0,62}$/; got ${JSON.stringify(table)}.`,
    );
  }
  return `"${table}"`;
}

/**
 * The SQL that creates the store's tables (idempotent: `CREATE TABLE IF NOT EXISTS`), to put in your
 * migrations when the application's database role may not create tables. {@link PostgresStore.createTable}
 * runs the same statements. Running it again on a database made by an earlier version adds the
 * resource table and leaves the event table as it is.
 *
 * The event table, one row per key: `event_id` (text, primary key) holds the store key (dedup scope and event id),
 * `token` the owning delivery attempt (NULL once completed or released), `state` is `in_progress` or `completed`,
 * and `expires_at` (timestamptz) ends the lease or the memory.
 *
 * The resource table (`resourceTable`, by default the event table's name + `_resources`), used only by
 * receivers with the `ordering` option, one row per resource: `resource` (text, primary key), `token`
 * the delivery attempt holding its lease (NULL when none), `lease_expires_at` the end of that lease,
 * `watermark` (double precision: positions are integers up to 2^53 - 1, which it holds exactly) the
 * newest position completed and `watermark_expires_at` the end of its memory. When the name of the
 * event table leaves no room for the suffix (over 53 characters) and no `resourceTable` is given, only
 * the event table is created.
 *
 * @example
 * ```ts
 * import { writeFileSync } from 'node:fs';
 * import { postgresStoreMigration } from 'service-webhooks/postgres';
 *
 * writeFileSync('migrations/0042_webhook_events.sql', postgresStoreMigration('webhook_events'));
 * ```
 */
export function postgresStoreMigration(table: string = DEFAULT_TABLE, resourceTable?: string): string {
  const resources = resourceTableFor(table, resourceTable);
  const events = `CREATE TABLE IF NOT EXISTS ${quotedTable(table)} (
  -- The store key (dedup scope and event id); the column's name predates the scope.
  event_id   text PRIMARY KEY,
  -- The owning attempt while in progress; NULL once completed or released, so no token matches then.
  token      text,
  state      text NOT NULL CHECK (state IN ('in_progress', 'completed')),
  -- End of the lease while in progress, end of the memory once completed.
  expires_at timestamptz NOT NULL
);
`;
  if (resources === undefined) return events;
  return `${events}CREATE TABLE IF NOT EXISTS ${quotedTable(resources, 'resourceTable')} (
  -- The resource (object and id, within the receiver's dedup scope).
  resource             text PRIMARY KEY,
  -- The delivery attempt holding the resource's lease; NULL when nobody does.
  token                text,
  lease_expires_at     timestamptz NOT NULL,
  -- The newest position completed (NULL before the first), remembered until watermark_expires_at.
  watermark            double precision,
  watermark_expires_at timestamptz
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
 * A claim that does not take the event answers from the row as it is once the claim is decided (a
 * second, read-only statement when the first cannot tell), never from an older version of it.
 * Times come from the database's clock (`clock_timestamp()`, read as the row is written, after any
 * wait for a concurrent writer), so application servers with skewed clocks agree. Ended rows are claimable as they are; {@link PostgresStore.purgeExpired} deletes them.
 *
 * Every failed call throws `StoreUnavailableError` with the `pg` error as `cause`: the sender is
 * answered 503 `store_unavailable` and retries later. A `pg.Pool` also emits 'error' when one of its
 * idle connections drops (a restart, a failover): with no listener that would end the process, so the
 * store listens, and the error reaches every receiver's `onError` (or stderr) as a
 * `StoreUnavailableError`. The pool opens a fresh connection for the next call.
 *
 * Event ids are kept intact whatever they hold: `%`, NUL (which `text` cannot hold) and unpaired
 * surrogates are escaped ({@link PostgresStore.keyFor}).
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
  /**
   * The stores made on each pool, for the one 'error' listener each pool gets. One per pool, not per
   * store: stores are cheap and sometimes made per test or per table, and a listener each would keep
   * every discarded store alive as long as the pool (Node warns past ten). Weak references, so a store
   * nobody uses any more drops out.
   */
  static readonly #storesByPool = new WeakMap<ErrorEmitter, Set<WeakRef<PostgresStore>>>();

  readonly #pool: PostgresQueryable;
  readonly #tableName: string;
  readonly #table: string;
  readonly #resourceTableName: string | undefined;
  /** The resource table, quoted; `undefined` when `table` leaves no room for the default suffix. */
  readonly #resources: string | undefined;
  readonly #backgroundErrors = new BackgroundErrors();
  #listened = false;

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
    const resources = resourceTableFor(table, options.resourceTable);
    this.#resources = resources === undefined ? undefined : quotedTable(resources, 'resourceTable');
    this.#resourceTableName = resources;
    this.#pool = pool as PostgresQueryable;
    if (typeof (pool as Partial<ErrorEmitter>).on === 'function')
      PostgresStore.#watch(pool as ErrorEmitter, this);
  }

  static #watch(pool: ErrorEmitter, store: PostgresStore): void {
    let stores = PostgresStore.#storesByPool.get(pool);
    if (stores === undefined) {
      const known = new Set<WeakRef<PostgresStore>>();
      stores = known;
      PostgresStore.#storesByPool.set(pool, known);
      pool.on('error', (cause) => PostgresStore.#dropped(known, cause));
    }
    stores.add(new WeakRef(store));
  }

  /** An idle connection of the pool failed: tell each store's receivers, or say it once on stderr. */
  static #dropped(stores: Set<WeakRef<PostgresStore>>, cause: unknown): void {
    const live: PostgresStore[] = [];
    for (const ref of stores) {
      const store = ref.deref();
      if (store === undefined) stores.delete(ref);
      else live.push(store);
    }
    const reason = cause instanceof Error ? cause.message : String(cause);
    const error = new StoreUnavailableError(
      `An idle PostgreSQL connection was lost (${reason}); the pool opens a new one for the next call.`,
      { cause },
    );
    const listened = live.filter((store) => store.#listened);
    // Stores that no receiver uses (one made for createTable, say) would each print it on stderr, beside
    // the receivers that heard it: only when nobody heard it is it said there, and once.
    const targets = listened.length > 0 ? listened : live.slice(0, 1);
    if (targets.length === 0) new BackgroundErrors().report(error);
    for (const store of targets) store.#backgroundErrors.report(error);
  }

  /**
   * Flow-control state for inbox workers on this store's pool (`rate`, `concurrencyPerKey`), in the
   * table `webhook_flow_control` (created at first use): what an SQS worker takes as
   * `flowControl: store`.
   *
   * @example
   * ```ts
   * startSqsWorker(webhooks, { client: sqs, queueUrl, rate: { max: 10, perMs: 1_000 }, flowControl: store });
   * ```
   */
  flowControl(): FlowControl {
    return new PostgresFlowControl({ pool: this.#pool });
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
    await this.#pool.query(postgresStoreMigration(this.#tableName, this.#resourceTableName));
  }

  async claim(key: string, token: string, leaseMs: number): Promise<ClaimResult> {
    const values = [encodeKey(key), token, wholeMilliseconds(leaseMs)];
    // The INSERT decides on the row as it is: ON CONFLICT locks the latest version (waiting for a
    // concurrent writer to commit) and checks the WHERE on that. A SELECT in the same statement, though,
    // reads the statement's snapshot, taken before that wait: a row another attempt has just taken over
    // can still look like the expired completion it replaced, a row just written like no row at all. So
    // the statement answers only what its snapshot cannot get wrong: 'claimed', or a completion live
    // when read (nothing replaces a live completion: no token matches it and every write needs it
    // ended, so it was the latest version then). Anything else is read again in a statement of its own,
    // a fresh snapshot (under READ COMMITTED, and under REPEATABLE READ too, each autocommit statement
    // being its own transaction). A claim that wrote nothing may answer any state the row had during
    // the call, so either read is a true answer. The first claim of an event stays one round trip.
    const claimSql = `WITH claimed AS (
         INSERT INTO ${this.#table} AS e (event_id, token, state, expires_at)
         VALUES ($1, $2, 'in_progress', ${FROM_NOW})
         ON CONFLICT (event_id) DO UPDATE
           SET token = EXCLUDED.token, state = 'in_progress', expires_at = ${FROM_NOW}
           WHERE e.expires_at <= clock_timestamp()
         RETURNING 1
       )
       SELECT 'claimed' AS result FROM claimed
       UNION ALL
       SELECT 'completed' FROM ${this.#table}
       WHERE event_id = $1 AND state = 'completed' AND expires_at > clock_timestamp()
         AND NOT EXISTS (SELECT 1 FROM claimed)`;
    const liveSql = `SELECT state FROM ${this.#table} WHERE event_id = $1 AND expires_at > clock_timestamp()`;
    for (let round = 0; round < CLAIM_ROUNDS; round++) {
      const { rows } = await this.#query<{ result: string }>('claim', claimSql, values);
      const result = rows[0]?.result;
      if (result === 'claimed' || result === 'completed') return result;
      const { rows: live } = await this.#query<{ state: string }>('claim', liveSql, [values[0]]);
      const state = live[0]?.state;
      if (state === 'completed' || state === 'in_progress') return state;
      // No live row: the holder released it, or its lease ended, after the INSERT saw it. The event is
      // free, and a claim now would take it: so claim again rather than answer from a past state.
    }
    // The safe answer: the sender is told 409 and retries, by which time the row has settled.
    return 'in_progress';
  }

  async complete(key: string, token: string, ttlMs: number): Promise<CompleteResult> {
    // The token column is NULL once completed, so completing twice with one token finds no holder.
    const { rowCount } = await this.#query(
      'complete',
      `INSERT INTO ${this.#table} AS e (event_id, token, state, expires_at)
       VALUES ($1, NULL, 'completed', ${FROM_NOW})
       ON CONFLICT (event_id) DO UPDATE
         SET token = NULL, state = 'completed', expires_at = ${FROM_NOW}
         WHERE (e.token = $2 AND e.state = 'in_progress') OR e.expires_at <= clock_timestamp()`,
      [encodeKey(key), token, wholeMilliseconds(ttlMs)],
    );
    return rowCount === 1 ? 'completed' : 'lost';
  }

  async renew(key: string, token: string, leaseMs: number): Promise<RenewResult> {
    const { rowCount } = await this.#query(
      'renew',
      `INSERT INTO ${this.#table} AS e (event_id, token, state, expires_at)
       VALUES ($1, $2, 'in_progress', ${FROM_NOW})
       ON CONFLICT (event_id) DO UPDATE
         SET token = EXCLUDED.token, state = 'in_progress', expires_at = ${FROM_NOW}
         WHERE (e.token = $2 AND e.state = 'in_progress') OR e.expires_at <= clock_timestamp()`,
      [encodeKey(key), token, wholeMilliseconds(leaseMs)],
    );
    return rowCount === 1 ? 'renewed' : 'lost';
  }

  async release(key: string, token: string): Promise<void> {
    // The row is ended, not deleted: a claim, renew or completion waiting on this statement's lock
    // must then find the row and take the DO UPDATE path, which reads the clock after the wait. Had the
    // row gone, it would take the INSERT path, whose VALUES (and their clock_timestamp()) were built
    // before the wait: a lease or TTL shortened by however long this release took to commit (35 ms
    // under load, enough for the next claim to take the event within the new lease; found by
    // checkStore). No token: no late release or completion can match it.
    await this.#query(
      'release',
      `UPDATE ${this.#table} SET token = NULL, expires_at = '-infinity'
       WHERE event_id = $1 AND token = $2 AND state = 'in_progress'`,
      [encodeKey(key), token],
    );
  }

  /**
   * Part of the `ordering` option's contract (see `IdempotencyStore`): take the resource's lease for
   * `token`, or answer how long its holder's lease still runs. One statement in the common cases: an
   * `INSERT ... ON CONFLICT DO UPDATE ... WHERE` that takes the row when its lease ended, fenced as
   * {@link PostgresStore.claim} is, and answers the watermark from the row it locked.
   *
   * @example
   * ```ts
   * const claim = await store.claimResource('user:usr_1', crypto.randomUUID(), 45_000);
   * if (claim.outcome === 'busy') console.log(`retry in ${claim.retryAfterMs} ms`);
   * ```
   */
  async claimResource(resource: string, token: string, leaseMs: number): Promise<ResourceClaimResult> {
    const table = this.#resourceTable();
    const values = [encodeKey(resource), token, wholeMilliseconds(leaseMs)];
    // As in claim: the DO UPDATE decides on the latest version of the row (after any wait for a
    // concurrent writer), and RETURNING reads that version, so the watermark answered is the one no
    // completion has moved since. A claim that took nothing answers from its snapshot only what the
    // snapshot cannot get wrong: a lease live when read was live at the decision (leases only move
    // forward while held, and a statement that ends one needs the holder's token), so the time left is
    // read from it; otherwise a fresh statement reads it.
    const claimSql = `WITH claimed AS (
         INSERT INTO ${table} AS r (resource, token, lease_expires_at)
         VALUES ($1, $2, ${FROM_NOW})
         ON CONFLICT (resource) DO UPDATE
           SET token = EXCLUDED.token, lease_expires_at = ${FROM_NOW}
           WHERE r.lease_expires_at <= clock_timestamp()
         RETURNING CASE WHEN r.watermark_expires_at > clock_timestamp() THEN r.watermark END AS watermark
       )
       SELECT true AS claimed, watermark, NULL::float8 AS left_ms FROM claimed
       UNION ALL
       SELECT false, NULL, ${LEFT_MS} FROM ${table}
       WHERE resource = $1 AND lease_expires_at > clock_timestamp()
         AND NOT EXISTS (SELECT 1 FROM claimed)`;
    const leftSql = `SELECT ${LEFT_MS} AS left_ms FROM ${table}
       WHERE resource = $1 AND lease_expires_at > clock_timestamp()`;
    for (let round = 0; round < CLAIM_ROUNDS; round++) {
      const { rows } = await this.#query<ResourceRow>('claim', claimSql, values, 'resource');
      const row = rows[0];
      if (row?.claimed === true) return { outcome: 'claimed', watermark: row.watermark ?? undefined };
      if (row !== undefined) return busy(row.left_ms);
      const { rows: live } = await this.#query<ResourceRow>('claim', leftSql, [values[0]], 'resource');
      if (live[0] !== undefined) return busy(live[0].left_ms);
      // Free again by now (released, or the lease just ended): claim again rather than answer busy.
    }
    return busy(1);
  }

  /**
   * Part of the `ordering` option's contract: extend the resource's lease to `leaseMs` from now, on
   * the terms of {@link PostgresStore.renew}. One statement.
   *
   * @example
   * ```ts
   * await store.renewResource('user:usr_1', token, 45_000); // 'renewed' or 'lost'
   * ```
   */
  async renewResource(resource: string, token: string, leaseMs: number): Promise<RenewResult> {
    const table = this.#resourceTable();
    const { rowCount } = await this.#query(
      'renew',
      `INSERT INTO ${table} AS r (resource, token, lease_expires_at)
       VALUES ($1, $2, ${FROM_NOW})
       ON CONFLICT (resource) DO UPDATE
         SET token = EXCLUDED.token, lease_expires_at = ${FROM_NOW}
         WHERE r.token = $2 OR r.lease_expires_at <= clock_timestamp()`,
      [encodeKey(resource), token, wholeMilliseconds(leaseMs)],
      'resource',
    );
    return rowCount === 1 ? 'renewed' : 'lost';
  }

  /**
   * Part of the `ordering` option's contract: end the resource's lease, only while `token` holds it.
   * The watermark stays. One statement.
   *
   * @example
   * ```ts
   * await store.releaseResource('user:usr_1', token);
   * ```
   */
  async releaseResource(resource: string, token: string): Promise<void> {
    const table = this.#resourceTable();
    // Ended, not deleted, for the reason release gives: the row keeps the watermark anyway.
    await this.#query(
      'release',
      `UPDATE ${table} SET token = NULL, lease_expires_at = '-infinity'
       WHERE resource = $1 AND token = $2`,
      [encodeKey(resource), token],
      'resource',
    );
  }

  /**
   * Part of the `ordering` option's contract: complete the event on {@link PostgresStore.complete}'s
   * terms and, in the same statement (one transaction), advance the resource's watermark to
   * `position` (never back), remember it `watermarkTtlMs` from now (never shorter than it was) and end
   * the lease `token` holds on the resource. When the event's completion is refused ('lost') the
   * resource row is not touched.
   *
   * One statement: a data-modifying CTE completes the event row and returns a row only when it wrote;
   * the resource's `INSERT ... SELECT ... FROM done ON CONFLICT DO UPDATE` therefore writes only after a
   * completion, and PostgreSQL runs both in one statement's transaction, so no reader ever sees one
   * write without the other. Locks are taken event row first, resource row second, an order no other
   * statement of the store reverses, so two completions never deadlock.
   *
   * @example
   * ```ts
   * await store.completeOrdered(key, token, 86_400_000, 'user:usr_1', 3_400_000_001, 86_400_000);
   * ```
   */
  async completeOrdered(
    key: string,
    token: string,
    ttlMs: number,
    resource: string,
    position: number,
    watermarkTtlMs: number,
  ): Promise<CompleteResult> {
    const table = this.#resourceTable();
    const watermarkFromNow = "clock_timestamp() + $6 * interval '1 millisecond'";
    const { rows } = await this.#query<{ completed: number }>(
      'complete',
      `WITH done AS (
         INSERT INTO ${this.#table} AS e (event_id, token, state, expires_at)
         VALUES ($1, NULL, 'completed', ${FROM_NOW})
         ON CONFLICT (event_id) DO UPDATE
           SET token = NULL, state = 'completed', expires_at = ${FROM_NOW}
           WHERE (e.token = $2 AND e.state = 'in_progress') OR e.expires_at <= clock_timestamp()
         RETURNING 1
       ), advanced AS (
         INSERT INTO ${table} AS r (resource, token, lease_expires_at, watermark, watermark_expires_at)
         SELECT $4, NULL, '-infinity', $5::float8, ${watermarkFromNow} FROM done
         ON CONFLICT (resource) DO UPDATE SET
           watermark = CASE WHEN r.watermark_expires_at > clock_timestamp()
                            THEN greatest(r.watermark, $5::float8) ELSE $5::float8 END,
           watermark_expires_at = CASE WHEN r.watermark_expires_at > clock_timestamp()
                            THEN greatest(r.watermark_expires_at, ${watermarkFromNow}) ELSE ${watermarkFromNow} END,
           token = CASE WHEN r.token = $2 THEN NULL ELSE r.token END,
           lease_expires_at = CASE WHEN r.token = $2 THEN '-infinity' ELSE r.lease_expires_at END
         RETURNING 1
       )
       SELECT count(*)::int AS completed FROM done`,
      [
        encodeKey(key),
        token,
        wholeMilliseconds(ttlMs),
        encodeKey(resource),
        position,
        wholeMilliseconds(watermarkTtlMs),
      ],
    );
    return rows[0]?.completed === 1 ? 'completed' : 'lost';
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
    // A claim of a key whose ended row this DELETE holds waits for it to commit and then inserts, with
    // a lease counted from before that wait (see release): run it when deliveries are few, or keep the
    // table small enough that it commits in milliseconds.
    const { rowCount } = await this.#pool.query(
      `DELETE FROM ${this.#table} WHERE expires_at <= clock_timestamp()`,
    );
    let purged = rowCount ?? 0;
    // The resource table exists only once the migration of this version ran: a database migrated
    // before it has none, and must still be purged.
    if (this.#resourceTableName !== undefined) {
      const { rows } = await this.#pool.query<{ present: boolean }>(
        'SELECT to_regclass($1) IS NOT NULL AS present',
        [this.#resources],
      );
      if (rows[0]?.present === true) {
        const { rowCount: resources } = await this.#pool.query(
          `DELETE FROM ${this.#resources} WHERE lease_expires_at <= clock_timestamp()
             AND (watermark_expires_at IS NULL OR watermark_expires_at <= clock_timestamp())`,
        );
        purged += resources ?? 0;
      }
    }
    return purged;
  }

  /**
   * Optional part of {@link IdempotencyStore}: each receiver that uses the store calls it once, and
   * hears from then on of the pool's idle connections that drop (as a `StoreUnavailableError` whose
   * `cause` is the `pg` error), through its `onError`.
   *
   * @example
   * ```ts
   * store.onBackgroundError((error) => console.warn(error.message, error.cause));
   * ```
   */
  onBackgroundError(listener: BackgroundErrorListener): void {
    this.#backgroundErrors.listen(listener);
    this.#listened = true;
  }

  /**
   * The `event_id` that holds the store key `key`, as the store writes it (for inspection and tests).
   * Only `%`, NUL and unpaired UTF-16 surrogates are escaped, as `%` and two hex digits (`%00` for NUL)
   * or `%u` and four: PostgreSQL text cannot hold NUL, nor (being UTF-8) unpaired surrogates. Distinct
   * keys stay distinct.
   *
   * @example
   * ```ts
   * await pool.query('SELECT state, expires_at FROM webhook_events WHERE event_id = $1', [store.keyFor(key)]);
   * ```
   */
  keyFor(key: string): string {
    return encodeKey(key);
  }

  /** The quoted resource table, or the configuration error that says how to name one. */
  #resourceTable(): string {
    if (this.#resources !== undefined) return this.#resources;
    throw new ConfigurationError(
      `PostgresStore \`table\` ${JSON.stringify(this.#tableName)} leaves no room for the resource table's default name (+ '${RESOURCE_TABLE_SUFFIX}', 63 characters at most): pass \`resourceTable\` to use the \`ordering\` option.`,
    );
  }

  async #query<Row extends object>(
    operation: string,
    text: string,
    values: unknown[],
    subject: 'event' | 'resource' = 'event',
  ) {
    try {
      return await this.#pool.query<Row>(text, values);
    } catch (cause) {
      const reason = cause instanceof Error ? cause.message : String(cause);
      throw new StoreUnavailableError(`PostgresStore could not ${operation} the ${subject}: ${reason}`, {
        cause,
      });
    }
  }
}
