/**
 * The example PostgreSQL store (examples/postgres-store) against a real PostgreSQL: DATABASE_URL when
 * set, otherwise postgres@127.0.0.1:5432/test. Each run creates its own table and drops it afterwards.
 */
import pg from 'pg';
import { ConfigurationError } from 'service-webhooks';
import { storeConformanceSuite } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { PostgresStore } from '../examples/postgres-store/postgres-store.js';

const connectionString = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const table = `webhook_events_test_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
// Wide enough that 100 concurrent claims are 100 concurrent statements, not a queue behind a few.
const pool = new pg.Pool({ connectionString, max: 50 });
// A second pool stands for a second application process with its own connections.
const otherPool = new pg.Pool({ connectionString, max: 50 });

beforeAll(async () => {
  try {
    await new PostgresStore({ pool, table }).createTable();
  } catch (error) {
    throw new Error(
      `PostgreSQL is not reachable at ${connectionString.replace(/:[^:@/]*@/, ':***@')}: start it or set DATABASE_URL. (${String(error)})`,
    );
  }
});

afterAll(async () => {
  await pool.query(`DROP TABLE IF EXISTS "${table}"`);
  await Promise.all([pool.end(), otherPool.end()]);
});

storeConformanceSuite({
  name: 'PostgresStore (example)',
  createStore: () => new PostgresStore({ pool, table }),
  describe,
  test,
});

describe('PostgresStore (example) beyond the suite', () => {
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

  test('refuses a table name that is not a plain identifier', () => {
    expect(() => new PostgresStore({ pool, table: 'events; DROP TABLE users' })).toThrow(ConfigurationError);
  });
});
