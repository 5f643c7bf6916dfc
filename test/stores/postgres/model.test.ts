/**
 * PostgresStore checked against the store model (checkStore) on a real PostgreSQL (DATABASE_URL,
 * otherwise postgres@127.0.0.1:5432/test), in a table of its own: generated concurrent histories, each
 * checked for linearizability, with failures and slow answers injected around its statements. The seed
 * is new on every run (a failure prints it); STORE_CHECK_SEED pins it to replay one.
 */
import pg from 'pg';
import type { ClaimResult } from 'service-webhooks';
import { type PostgresQueryable, PostgresStore } from 'service-webhooks/postgres';
import { checkStore, type StoreCheckContext, storeModelSuite } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { storeCheckSeed } from '../../support/store-check.js';

const connectionString = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const table = `webhook_events_model_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
// Eight clients, a few statements each at once: 20 connections never queue.
const pool = new pg.Pool({ connectionString, max: 20 });

beforeAll(async () => {
  await new PostgresStore({ pool, table }).createTable();
  await Promise.all(Array.from({ length: 20 }, () => pool.query('SELECT pg_sleep(0.05)')));
});

afterAll(async () => {
  await pool.query(`DROP TABLE IF EXISTS "${table}", "${table}_resources"`);
  await pool.end();
});

/**
 * The pool as the store sees it, with the checker's fault hook around each statement: a failure before
 * it is sent (nothing ran), or after it ran (its answer lost); or an answer slower than the deadline.
 */
function faulty(fault: StoreCheckContext['fault']): PostgresQueryable {
  return {
    async query<Row extends object>(text: string, values?: unknown[]) {
      await fault('statement');
      const result = await pool.query<Row>(text, values);
      await fault('answer');
      return result;
    },
  };
}

storeModelSuite({
  name: 'PostgresStore',
  createStore: ({ fault }) => new PostgresStore({ pool: faulty(fault), table }),
  describe,
  test,
  histories: 150,
  timeLimitMs: 25_000,
  seed: storeCheckSeed(),
});

/**
 * PostgresStore's claim as it was before commit 15067a9: its fallback read was a SELECT in the claim's
 * own statement, which reads the statement's snapshot, taken before the INSERT waited for a concurrent
 * writer. So a claim that lost to a concurrent takeover of an expired completion could answer
 * 'completed' (the completion it replaced), and one that lost to a concurrent write it could not yet
 * see answered 'in_progress' for an event just completed.
 */
class SnapshotReadingStore extends PostgresStore {
  override async claim(key: string, token: string, leaseMs: number): Promise<ClaimResult> {
    const { rows } = await pool.query<{ result: string }>(
      `WITH claimed AS (
         INSERT INTO "${table}" AS e (event_id, token, state, expires_at)
         VALUES ($1, $2, 'in_progress', clock_timestamp() + $3 * interval '1 millisecond')
         ON CONFLICT (event_id) DO UPDATE
           SET token = EXCLUDED.token, state = 'in_progress', expires_at = EXCLUDED.expires_at
           WHERE e.expires_at <= clock_timestamp()
         RETURNING 1
       )
       SELECT 'claimed' AS result FROM claimed
       UNION ALL
       SELECT state FROM "${table}" WHERE event_id = $1 AND NOT EXISTS (SELECT 1 FROM claimed)`,
      [this.keyFor(key), token, Math.ceil(leaseMs)],
    );
    const result = rows[0]?.result;
    return result === 'claimed' || result === 'completed' ? result : 'in_progress';
  }
}

describe('checkStore finds the snapshot race PostgresStore had', () => {
  test('its claim before 15067a9 answers from a stale snapshot, and the checker says so within seconds', async () => {
    const report = await checkStore({
      createStore: () => new SnapshotReadingStore({ pool, table }),
      timeLimitMs: 20_000,
      shrinkTimeMs: 3_000,
      seed: storeCheckSeed(),
    });
    if (report.ok) throw new Error(`not found in ${report.histories} histories (seed ${report.seed})`);
    expect(report.violation, report.history).toMatch(/a claim answered "(completed|in_progress)"/);
  }, 30_000);
});
