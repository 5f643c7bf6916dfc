/**
 * PostgresStore's resource operations (the `ordering` option) against a real PostgreSQL
 * (DATABASE_URL, otherwise postgres@127.0.0.1:5432/test), in tables of this run's own: the shared
 * direct tests of ../resource-operations.ts, then what only this store has (the resource table and its
 * migration, what completeOrdered leaves in the rows, the purge).
 */
import pg from 'pg';
import { ConfigurationError } from 'service-webhooks';
import { PostgresStore, postgresStoreMigration } from 'service-webhooks/postgres';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { resourceOperationsTests } from '../resource-operations.js';

const connectionString = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const suffix = crypto.randomUUID().replaceAll('-', '').slice(0, 12);
const table = `webhook_events_ordering_${suffix}`;
const pool = new pg.Pool({ connectionString, max: 20 });
const created: string[] = [table, `${table}_resources`];

beforeAll(async () => {
  await new PostgresStore({ pool, table }).createTable();
  // Open the connections first: 20 claims at once meet as 20 statements, not 20 connection start-ups.
  await Promise.all(Array.from({ length: 20 }, () => pool.query('SELECT pg_sleep(0.05)')));
});

afterAll(async () => {
  for (const name of created) await pool.query(`DROP TABLE IF EXISTS "${name}"`);
  await pool.end();
});

resourceOperationsTests({
  name: 'PostgresStore',
  createStore: () => new PostgresStore({ pool, table }),
  describe,
  test,
  expect,
});

describe('PostgresStore: the resource table', () => {
  test('the migration creates both tables, and running it again on an older database adds the resource table', async () => {
    const older = `webhook_events_older_${suffix}`;
    created.push(older, `${older}_resources`);
    // A database migrated by an earlier version: the event table alone.
    const eventsOnly = postgresStoreMigration(older).split('CREATE TABLE').slice(0, 2).join('CREATE TABLE');
    await pool.query(eventsOnly);
    const store = new PostgresStore({ pool, table: older });
    expect(await store.claim('evt_1', 'token-1', 60_000)).toBe('claimed');
    await expect(store.claimResource('user:usr_1', 'token-1', 60_000)).rejects.toMatchObject({
      code: 'store_unavailable',
    });
    // The same migration again: idempotent for the event table, and the resource table arrives.
    await pool.query(postgresStoreMigration(older));
    await store.createTable();
    expect(await store.claimResource('user:usr_1', 'token-1', 60_000)).toEqual({
      outcome: 'claimed',
      watermark: undefined,
    });
    expect(await store.claim('evt_1', 'token-2', 60_000)).toBe('in_progress');
  });

  test('resourceTable names the table; a table name with no room for the suffix asks for it', async () => {
    const named = `resources_${suffix}`;
    created.push(`events_${suffix}`, named);
    expect(postgresStoreMigration(`events_${suffix}`, named)).toContain(`"${named}"`);
    const store = new PostgresStore({ pool, table: `events_${suffix}`, resourceTable: named });
    await store.createTable();
    expect((await store.claimResource('user:usr_1', 'token', 60_000)).outcome).toBe('claimed');
    const { rows } = await pool.query(`SELECT resource, token FROM "${named}"`);
    expect(rows).toEqual([{ resource: 'user:usr_1', token: 'token' }]);

    const long = `t${'x'.repeat(55)}`;
    expect(postgresStoreMigration(long)).not.toContain('_resources');
    const unnamed = new PostgresStore({ pool, table: long });
    await expect(unnamed.claimResource('user:usr_1', 'token', 60_000)).rejects.toThrow(ConfigurationError);
    await expect(unnamed.claimResource('user:usr_1', 'token', 60_000)).rejects.toThrow(/resourceTable/);
    expect(() => new PostgresStore({ pool, resourceTable: 'Bad Name' })).toThrow(/resourceTable/);
  });

  test('completeOrdered writes both rows in one statement: completed, watermark, lease ended', async () => {
    const store = new PostgresStore({ pool, table });
    const resource = `user:rows_${suffix}`;
    const key = `${resource}\u001fevt_1`;
    expect(await store.claim(key, 'tok', 60_000)).toBe('claimed');
    expect((await store.claimResource(resource, 'tok', 60_000)).outcome).toBe('claimed');
    // The statement log shows one statement for the call: count the pool's queries around it.
    const sent: string[] = [];
    const counting = {
      query: (text: string, values?: unknown[]) => {
        sent.push(text);
        return pool.query(text, values);
      },
    };
    const counted = new PostgresStore({ pool: counting as never, table });
    expect(await counted.completeOrdered(key, 'tok', 60_000, resource, 9, 3_600_000)).toBe('completed');
    expect(sent).toHaveLength(1);
    const { rows: events } = await pool.query(`SELECT state, token FROM "${table}" WHERE event_id = $1`, [
      key,
    ]);
    expect(events).toEqual([{ state: 'completed', token: null }]);
    const { rows: resources } = await pool.query(
      `SELECT token, lease_expires_at <= clock_timestamp() AS ended, watermark,
              watermark_expires_at > clock_timestamp() + interval '59 minutes' AS remembered
       FROM "${table}_resources" WHERE resource = $1`,
      [resource],
    );
    expect(resources).toEqual([{ token: null, ended: true, watermark: 9, remembered: true }]);
  });

  test('purgeExpired deletes resource rows whose lease and watermark both ended, and keeps the others', async () => {
    const purgeTable = `webhook_events_purge_${suffix}`;
    created.push(purgeTable, `${purgeTable}_resources`);
    const store = new PostgresStore({ pool, table: purgeTable });
    await store.createTable();
    await store.claimResource('user:leased', 'a', 60_000);
    await store.claimResource('user:remembered', 'b', 60_000);
    expect(await store.claim('user:remembered\u001fevt', 'b', 60_000)).toBe('claimed');
    await store.completeOrdered('user:remembered\u001fevt', 'b', 60_000, 'user:remembered', 1, 60_000);
    await store.claimResource('user:gone', 'c', 60_000);
    await store.releaseResource('user:gone', 'c');
    // The completed event row stays (its memory is live); only the released, unremembered resource goes.
    expect(await store.purgeExpired()).toBe(1);
    const { rows } = await pool.query(`SELECT resource FROM "${purgeTable}_resources" ORDER BY resource`);
    expect(rows.map((row) => row.resource)).toEqual(['user:leased', 'user:remembered']);
    // A database without the resource table (migrated by an earlier version) is still purged.
    const bare = `webhook_events_bare_${suffix}`;
    created.push(bare);
    await pool.query(postgresStoreMigration(bare).split('CREATE TABLE').slice(0, 2).join('CREATE TABLE'));
    expect(await new PostgresStore({ pool, table: bare }).purgeExpired()).toBe(0);
  });
});
