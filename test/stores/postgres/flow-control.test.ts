/**
 * PostgresFlowControl's rows against a real PostgreSQL (DATABASE_URL, otherwise
 * postgres@127.0.0.1:5432/test), in a table of its own: a key's row goes once nothing of it is held
 * (its last slot given back, or its holders' leases ended), so the table does not grow with every key
 * ever used; and no deletion ever takes a live slot, however it interleaves with acquires, renewals
 * and releases.
 */
import pg from 'pg';
import { PostgresFlowControl } from 'service-webhooks/postgres';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { sleep } from '../../support/sleep.js';

const connectionString = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const table = `webhook_flow_control_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
const pool = new pg.Pool({ connectionString, max: 12 });
const holder = () => crypto.randomUUID();

beforeAll(async () => {
  await new PostgresFlowControl({ pool, table }).createTable();
});

afterAll(async () => {
  await pool.query(`DROP TABLE IF EXISTS "${table}"`);
  await pool.end();
});

async function keys(prefix: string): Promise<string[]> {
  const { rows } = await pool.query<{ key: string }>(
    `SELECT key FROM "${table}" WHERE key LIKE $1 ORDER BY key`,
    [`${prefix}%`],
  );
  return rows.map((row) => row.key);
}

async function eventually(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let waited = 0; waited < 5_000; waited += 50) {
    if (await check()) return;
    await sleep(50);
  }
  throw new Error(`Timed out waiting for ${what}.`);
}

test("a key's row goes with its last slot given back, a dead holder's at the next instance's prune; a rate's row stays", async () => {
  const q = `rows-${crypto.randomUUID().slice(0, 8)}`;
  const flow = new PostgresFlowControl({ pool, table });
  // Two holders of one key: the first release leaves the row to the second, the last one takes it.
  const [first, second] = [holder(), holder()];
  expect(await flow.acquireSlot(`key:${q}:shared`, first, 2, 30_000)).toEqual({ granted: true });
  expect(await flow.acquireSlot(`key:${q}:shared`, second, 2, 30_000)).toEqual({ granted: true });
  await flow.releaseSlot(`key:${q}:shared`, first);
  expect(await keys(`key:${q}:`)).toEqual([`key:${q}:shared`]);
  await flow.releaseSlot(`key:${q}:shared`, second);
  expect(await keys(`key:${q}:`)).toEqual([]);

  // A worker that died holding a slot never gives it back: its row outlives the lease...
  expect(await flow.acquireSlot(`key:${q}:dead`, holder(), 1, 300)).toEqual({ granted: true });
  expect(await flow.acquireRate(`rate:${q}`, 10, 1_000)).toEqual({ granted: true });
  await sleep(400);
  expect(await keys(`key:${q}:`)).toEqual([`key:${q}:dead`]);
  // ...until an instance prunes, at its first acquire (then at most once a minute): a restarted worker.
  const restarted = new PostgresFlowControl({ pool, table });
  expect(await restarted.acquireSlot(`key:${q}:live`, holder(), 1, 30_000)).toEqual({ granted: true });
  await eventually('the dead key pruned', async () => (await keys(`key:${q}:`)).length === 1);
  expect(await keys(`key:${q}:`)).toEqual([`key:${q}:live`]);
  // The rate's row keeps its window's grants: the table does not know the window to prune it by.
  expect(await keys(`rate:${q}`)).toEqual([`rate:${q}`]);
  // Nothing held, nothing pruned.
  expect(await restarted.prune()).toBe(0);
});

test('a held slot survives every prune and the other holders’ releases: renewed, counted, refused to a third', async () => {
  const q = `held-${crypto.randomUUID().slice(0, 8)}`;
  const flow = new PostgresFlowControl({ pool, table });
  const key = `key:${q}:account`;
  const kept = holder();
  // A lease far longer than the test: what could end the slot here is a deletion, never the clock.
  expect(await flow.acquireSlot(key, kept, 2, 60_000)).toEqual({ granted: true });
  for (let round = 0; round < 8; round++) {
    // Another holder comes and goes (its release must leave the row), and a prune runs.
    const passing = holder();
    expect(await flow.acquireSlot(key, passing, 2, 60_000)).toEqual({ granted: true });
    await flow.releaseSlot(key, passing);
    await flow.prune();
    expect(await flow.renewSlot(key, kept, 60_000)).toBe(true);
  }
  expect(await flow.acquireSlot(key, holder(), 1, 60_000)).toMatchObject({ granted: false });
  await flow.releaseSlot(key, kept);
  expect(await keys(key)).toEqual([]);
});

test('under contention, releases that delete rows and prunes never let more than max hold a key at once', async () => {
  const q = `race-${crypto.randomUUID().slice(0, 8)}`;
  const flow = new PostgresFlowControl({ pool, table });
  const hot = `key:${q}:hot`;
  const max = 2;
  let inUse = 0;
  let most = 0;
  let grants = 0;
  const until = Date.now() + 2_000;
  const worker = async () => {
    while (Date.now() < until) {
      const me = holder();
      const grant = await flow.acquireSlot(hot, me, max, 60_000);
      if (!grant.granted) {
        await sleep(Math.random() * 3);
        continue;
      }
      grants++;
      inUse++;
      most = Math.max(most, inUse);
      await sleep(Math.random() * 3);
      // Counted free before the database frees it: the database never holds fewer than counted here.
      inUse--;
      await flow.releaseSlot(hot, me);
    }
  };
  const pruner = async () => {
    while (Date.now() < until) await flow.prune();
  };
  // Keys used once each, given back and left dead: rows for the releases and the prunes to delete.
  const churn = async () => {
    for (let n = 0; Date.now() < until; n++) {
      const me = holder();
      await flow.acquireSlot(`key:${q}:once-${n}`, me, 1, 50);
      if (n % 2 === 0) await flow.releaseSlot(`key:${q}:once-${n}`, me);
    }
  };
  await Promise.all([...Array.from({ length: 6 }, worker), pruner(), pruner(), churn()]);
  expect(most).toBeLessThanOrEqual(max);
  expect(most).toBe(max);
  expect(grants).toBeGreaterThan(20);
  // Everything given back or ended: a prune leaves nothing of the keys.
  await sleep(100);
  while ((await flow.prune()) > 0);
  expect(await keys(`key:${q}:`)).toEqual([]);
});
