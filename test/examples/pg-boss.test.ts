/**
 * examples/pg-boss on the built package, against the real PostgreSQL the pg-boss tests use
 * (DATABASE_URL, otherwise postgres@127.0.0.1:5432/test): the web process acknowledges a delivery while
 * no worker runs (the event waits in PostgreSQL), the worker process then runs its handler once, and a
 * retry of the delivery is a duplicate. pg-boss's schema and the store's table are the test's own,
 * dropped afterwards.
 */
import pg from 'pg';
import { afterAll, test } from 'vitest';
import { expectQueuedThenHandledOnce } from './run-example.js';

const connectionString = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const suffix = crypto.randomUUID().replaceAll('-', '').slice(0, 12);
const schema = `pgboss_example_${suffix}`;
const table = `webhook_events_example_${suffix}`;
// startExample hands the examples this process's environment (each test file runs in its own worker).
process.env.DATABASE_URL = connectionString;
process.env.PGBOSS_SCHEMA = schema;
process.env.WEBHOOK_TABLE = table;
process.env.INBOX_QUEUE = `example-${suffix}`;

afterAll(async () => {
  const client = new pg.Client({ connectionString });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.query(`DROP TABLE IF EXISTS "${table}", "${table}_resources"`);
  await client.end();
});

test('examples/pg-boss: the web process queues while no worker runs; the worker handles it once (built package)', async () => {
  // The worker polls every 500 ms: three polls to show no second run.
  await expectQueuedThenHandledOnce('examples/pg-boss/web.ts', 'examples/pg-boss/worker.ts', 1_500);
}, 60_000);
