/**
 * A `pg.Pool` emits 'error' when an idle connection drops (a database restart, a failover, an admin's
 * pg_terminate_backend); an EventEmitter with no 'error' listener ends the process. PostgresStore
 * listens, so the receiver's onError hears of it and the process lives on.
 *
 * The real test runs a receiver in a child process (a crash is then an exit code, not a dead test
 * worker) against the real PostgreSQL (DATABASE_URL, otherwise postgres@127.0.0.1:5432/test), and drops
 * that process's idle connections only, found by their application_name: the shared server stays up.
 */
import { EventEmitter } from 'node:events';
import pg from 'pg';
import { StoreUnavailableError, type WebhookError } from 'service-webhooks';
import { PostgresStore } from 'service-webhooks/postgres';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { afterAll, describe, expect, test, vi } from 'vitest';
import { sendHttp } from '../../adapters/http-client.js';
import { ROOT, repoPath } from '../../support/paths.js';
import { startProcess } from '../../support/process.js';
import { sleep } from '../../support/sleep.js';

const connectionString = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const table = `webhook_events_pool_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
const applicationName = `service-webhooks-test-${crypto.randomUUID().slice(0, 8)}`;
const SECRET = 'whsec_pool_errors_test';
const admin = new pg.Pool({ connectionString, max: 2 });

afterAll(async () => {
  await admin.query(`DROP TABLE IF EXISTS "${table}", "${table}_resources"`);
  await admin.end();
});

describe('PostgresStore and a pool whose idle connection drops', () => {
  test('a real receiver process lives on: onError gets a StoreUnavailableError, the next delivery is 200', async () => {
    const receiver = await startProcess(
      process.execPath,
      ['--import', 'tsx', repoPath('test', 'stores', 'postgres', 'fixtures', 'receiver.ts')],
      {
        name: 'postgres receiver',
        cwd: ROOT,
        env: {
          DATABASE_URL: connectionString,
          APPLICATION_NAME: applicationName,
          TABLE: table,
          SECRET,
        },
        ready: /^\{"port":(\d+)\}$/m,
      },
    );
    try {
      const url = `http://127.0.0.1:${receiver.match[1]}/`;
      const send = (event: unknown) => {
        const body = JSON.stringify(event);
        return sendHttp(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-service-signature': signPayload(body, SECRET) },
          body: new TextEncoder().encode(body),
        });
      };
      const before = createTestEvent('user.created');
      expect((await send(before)).status).toBe(200);

      // Every connection of the receiver's pool is idle once the delivery is answered; drop them all.
      let dropped = 0;
      for (let waited = 0; dropped === 0 && waited < 5_000; waited += 50) {
        const { rows } = await admin.query<{ pid: number }>(
          `SELECT pg_terminate_backend(pid) AS pid FROM pg_stat_activity
           WHERE application_name = $1 AND state = 'idle'`,
          [applicationName],
        );
        dropped = rows.length;
        if (dropped === 0) await sleep(50);
      }
      expect(dropped).toBeGreaterThan(0);

      const [line] = await receiver.waitFor(/^\{"onError".*$/m, 10_000);
      expect(JSON.parse(line)).toMatchObject({
        onError: 'StoreUnavailableError',
        code: 'store_unavailable',
        message: expect.stringMatching(/idle PostgreSQL connection/),
        // admin_shutdown: what pg_terminate_backend, and a server shutting down, say.
        causeCode: '57P01',
      });
      // A crash would come right after the 'error' event: give it time to show.
      await sleep(200);
      expect(receiver.hasExited(), receiver.describe()).toBe(false);

      const after = await send(createTestEvent('user.created'));
      expect(after.status, after.body).toBe(200);
      const retry = await send(before);
      expect(retry.status, retry.body).toBe(200);
      expect(retry.headers['x-webhook-duplicate']).toBe('true');
      expect(receiver.hasExited(), receiver.describe()).toBe(false);
    } finally {
      await receiver.stop();
    }
  });
});

/** A pool as the store sees it: `query`, and an EventEmitter's `on`, like pg.Pool and pg.Client. */
class FakePool extends EventEmitter {
  async query() {
    return { rows: [], rowCount: 0 };
  }
}

describe('PostgresStore listens for pool errors (no database)', () => {
  const dropped = () =>
    Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });

  test("turns the pool's 'error' into a StoreUnavailableError for every receiver, with the pg error as cause", () => {
    const pool = new FakePool();
    const store = new PostgresStore({ pool });
    const first: WebhookError[] = [];
    const second: WebhookError[] = [];
    store.onBackgroundError((error) => first.push(error));
    store.onBackgroundError((error) => second.push(error));
    const cause = dropped();
    pool.emit('error', cause);
    expect(first).toHaveLength(1);
    expect(second).toEqual(first);
    expect(first[0]).toBeInstanceOf(StoreUnavailableError);
    expect(first[0]).toMatchObject({ code: 'store_unavailable', cause });
    expect(first[0]!.message).toMatch(/idle PostgreSQL connection was lost.*administrator command/);
  });

  test('says it on stderr, once, while no receiver listens; never throws', () => {
    const pool = new FakePool();
    new PostgresStore({ pool });
    new PostgresStore({ pool });
    const stderr = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      expect(() => pool.emit('error', dropped())).not.toThrow();
      expect(stderr).toHaveBeenCalledTimes(1);
      expect(String(stderr.mock.calls[0]![0])).toMatch(/StoreUnavailableError.*idle PostgreSQL connection/);
    } finally {
      stderr.mockRestore();
    }
  });

  test('puts one listener on a pool however many stores share it; each store tells its own receivers', () => {
    const pool = new FakePool();
    const stores = Array.from({ length: 20 }, (_, i) => new PostgresStore({ pool, table: `t${i}` }));
    expect(pool.listenerCount('error')).toBe(1);
    const heard: number[] = [];
    stores[3]!.onBackgroundError(() => heard.push(3));
    stores[7]!.onBackgroundError(() => heard.push(7));
    const stderr = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      pool.emit('error', dropped());
      expect(heard.sort()).toEqual([3, 7]);
      // Stores no receiver listens to stay quiet when another store's receiver heard it.
      expect(stderr).not.toHaveBeenCalled();
    } finally {
      stderr.mockRestore();
    }
  });

  test('takes a pool without `on` (a plain queryable) as it is', async () => {
    const store = new PostgresStore({ pool: { query: async () => ({ rows: [], rowCount: 1 }) } });
    store.onBackgroundError(() => {});
    expect(await store.complete('k', 't', 1_000)).toBe('completed');
  });
});
