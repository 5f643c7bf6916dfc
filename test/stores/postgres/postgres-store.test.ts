/**
 * `service-webhooks/postgres` against a real PostgreSQL: DATABASE_URL when set, otherwise
 * postgres@127.0.0.1:5432/test. Each run creates its own table and drops it afterwards.
 */
import pg from 'pg';
import { ConfigurationError, StoreUnavailableError } from 'service-webhooks';
import { PostgresStore, postgresStoreMigration } from 'service-webhooks/postgres';
import { storeConformanceSuite } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { checkConnectionBudget } from './connection-budget.js';

const connectionString = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const table = `webhook_events_test_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
// Each pool's width: 2 × 10 connections, what a developer's database with other clients can give
// (2 × 50 was the whole of PostgreSQL's default max_connections). The 100 concurrent claims of the
// races below still meet as 20 concurrent statements, two processes' worth, with the rest queued.
const POOL_WIDTH = 10;
const pool = new pg.Pool({ connectionString, max: POOL_WIDTH });
// A second pool stands for a second application process with its own connections.
const otherPool = new pg.Pool({ connectionString, max: POOL_WIDTH });

beforeAll(async () => {
  await checkConnectionBudget(
    connectionString,
    2 * POOL_WIDTH,
    'test/stores/postgres/postgres-store.test.ts',
  );
  try {
    await new PostgresStore({ pool, table }).createTable();
  } catch (error) {
    throw new Error(
      `PostgreSQL is not reachable at ${connectionString.replace(/:[^:@/]*@/, ':***@')}: start it or set DATABASE_URL. (${String(error)})`,
    );
  }
  // Open every connection first, as a running application's pool has: the suite times each store call
  // against a 1 s deadline, and many connections opened at once (a backend forked for each) can take
  // longer than that on a loaded machine. That is start-up cost, not the store's.
  await Promise.all(
    [pool, otherPool].flatMap((each) =>
      Array.from({ length: POOL_WIDTH }, () => each.query('SELECT pg_sleep(0.05)')),
    ),
  );
});

afterAll(async () => {
  await pool.query(`DROP TABLE IF EXISTS "${table}", "${table}_resources"`);
  await Promise.all([pool.end(), otherPool.end()]);
});

storeConformanceSuite({
  name: 'PostgresStore',
  createStore: () => new PostgresStore({ pool, table }),
  describe,
  test,
  ordering: true,
  // The receiver's own deadline for a store call (storeTimeoutMs' default), not the suite's 1 s: its
  // 100 concurrent claims queue ten deep on this pool of 10, and on CI's loaded machine the last of
  // them answered after 1,000 ms, which a receiver would have waited for.
  callDeadlineMs: 2_000,
});

describe('PostgresStore beyond the suite', () => {
  test('of 100 concurrent claims from two pools (two processes), exactly one wins', async () => {
    const stores = [new PostgresStore({ pool, table }), new PostgresStore({ pool: otherPool, table })];
    for (let round = 0; round < 5; round++) {
      const id = `race-${crypto.randomUUID()}`;
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) => stores[i % 2]!.claim(id, crypto.randomUUID(), 60_000)),
      );
      expect(results.filter((result) => result === 'claimed')).toHaveLength(1);
      expect(results.filter((result) => result === 'in_progress')).toHaveLength(99);
    }
  });

  test('of 100 concurrent claims of an expired lease, exactly one takes it over', async () => {
    const store = new PostgresStore({ pool, table });
    const id = `takeover-${crypto.randomUUID()}`;
    await store.claim(id, crypto.randomUUID(), 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const results = await Promise.all(
      Array.from({ length: 100 }, () => store.claim(id, crypto.randomUUID(), 60_000)),
    );
    expect(results.filter((result) => result === 'claimed')).toHaveLength(1);
  });

  test('after a lease ended, the old owner renews or completes while two pools claim: one side wins', async () => {
    const stores = [new PostgresStore({ pool, table }), new PostgresStore({ pool: otherPool, table })];
    for (const call of ['renew', 'complete'] as const) {
      // The owner's statement goes out before, or after some of, 100 strangers' claims from both pools.
      for (const before of [0, 0, 2, 10, 50]) {
        const id = `late-${call}-${crypto.randomUUID()}`;
        const owner = crypto.randomUUID();
        await stores[0]!.claim(id, owner, 1);
        await new Promise((resolve) => setTimeout(resolve, 20));
        const claims = Array.from({ length: before }, (_, i) =>
          stores[i % 2]!.claim(id, crypto.randomUUID(), 60_000),
        );
        const mine = stores[0]![call](id, owner, 60_000);
        const more = Array.from({ length: 100 - before }, (_, i) =>
          stores[i % 2]!.claim(id, crypto.randomUUID(), 60_000),
        );
        const [result, results] = await Promise.all([mine, Promise.all([...claims, ...more])]);
        const claimed = results.filter((r) => r === 'claimed').length;
        expect(`${result}, ${claimed} claimed`).toBe(
          result === 'lost' ? 'lost, 1 claimed' : `${call === 'renew' ? 'renewed' : 'completed'}, 0 claimed`,
        );
      }
    }
  });

  test('purgeExpired deletes ended rows only', async () => {
    const store = new PostgresStore({ pool, table });
    const ended = `ended-${crypto.randomUUID()}`;
    const live = `live-${crypto.randomUUID()}`;
    await store.claim(ended, crypto.randomUUID(), 1);
    await store.claim(live, crypto.randomUUID(), 60_000);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await store.purgeExpired()).toBeGreaterThanOrEqual(1);
    const { rows } = await pool.query<{ event_id: string }>(
      `SELECT event_id FROM "${table}" WHERE event_id = ANY($1)`,
      [[ended, live]],
    );
    expect(rows.map((row) => row.event_id)).toEqual([live]);
  });

  test('refuses a table name that is not a plain identifier, or a missing pool', () => {
    expect(() => new PostgresStore({ pool, table: 'events; DROP TABLE users' })).toThrow(ConfigurationError);
    expect(() => postgresStoreMigration('Events')).toThrow(ConfigurationError);
    expect(() => new PostgresStore({} as never)).toThrow(ConfigurationError);
  });

  test('postgresStoreMigration is the SQL createTable runs: idempotent, and it builds the same table', async () => {
    const other = `webhook_events_migration_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const sql = postgresStoreMigration(other);
    expect(sql).toMatch(new RegExp(`^CREATE TABLE IF NOT EXISTS "${other}" \\(`));
    expect(postgresStoreMigration()).toContain('"webhook_events"');
    try {
      await pool.query(sql);
      await pool.query(sql);
      await new PostgresStore({ pool, table: other }).createTable();
      const columns = async (name: string) =>
        (
          await pool.query<{ column_name: string; data_type: string; is_nullable: string }>(
            `SELECT column_name, data_type, is_nullable FROM information_schema.columns
             WHERE table_name = $1 ORDER BY ordinal_position`,
            [name],
          )
        ).rows;
      expect(await columns(other)).toEqual(await columns(table));
      expect((await columns(other)).map((column) => column.column_name)).toEqual([
        'event_id',
        'token',
        'state',
        'expires_at',
      ]);
    } finally {
      await pool.query(`DROP TABLE IF EXISTS "${other}", "${other}_resources"`);
    }
  });

  test('unpaired surrogates and % stay distinct keys (pg would send unpaired surrogates as U+FFFD)', async () => {
    const store = new PostgresStore({ pool, table });
    const base = `surrogates-${crypto.randomUUID()}`;
    const keys = [`${base}\uD800`, `${base}\uDC00`, `${base}\uFFFD`, `${base}%uD800`, `${base}%`];
    expect(new Set(keys.map((key) => store.keyFor(key))).size).toBe(keys.length);
    const results = await Promise.all(keys.map((key) => store.claim(key, crypto.randomUUID(), 60_000)));
    expect(results).toEqual(keys.map(() => 'claimed'));
    expect(store.keyFor('evt_plain:123')).toBe('evt_plain:123');
  });

  test('ids with NUL (which PostgreSQL text refuses) are recorded, kept intact and apart', async () => {
    const store = new PostgresStore({ pool, table });
    const base = `nul-${crypto.randomUUID()}`;
    // NUL beside hex-like text: an escape of variable length would read '\u0000' + '0' as one code.
    const ids = [
      `${base}\u0000`,
      `\u0000${base}`,
      `${base}\u00000`,
      `${base}\u000000`,
      `${base}\u0000%00`,
      `${base}%00`,
      `${base}\u0000\u0000`,
      `${base}\u0000\uD800`,
    ];
    expect(new Set(ids.map((id) => store.keyFor(id))).size).toBe(ids.length);
    for (const id of ids) {
      const owner = crypto.randomUUID();
      expect(await store.claim(id, owner, 60_000), JSON.stringify(id)).toBe('claimed');
      expect(await store.complete(id, owner, 60_000), JSON.stringify(id)).toBe('completed');
      expect(await store.claim(id, crypto.randomUUID(), 60_000), JSON.stringify(id)).toBe('completed');
    }
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${table}" WHERE event_id LIKE $1 AND state = 'completed'`,
      [`%${base}%`],
    );
    expect(rows[0]!.n).toBe(ids.length);
  });

  test('a failing database is a StoreUnavailableError carrying the pg error as cause', async () => {
    const missing = new PostgresStore({ pool, table: 'no_such_table_service_webhooks' });
    for (const call of [
      () => missing.claim('k', 't', 1_000),
      () => missing.complete('k', 't', 1_000),
      () => missing.renew('k', 't', 1_000),
      () => missing.release('k', 't'),
    ]) {
      const error = await call().then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(error).toMatchObject({
        code: 'store_unavailable',
        cause: expect.objectContaining({ code: '42P01' }),
      });
    }
  });
});
