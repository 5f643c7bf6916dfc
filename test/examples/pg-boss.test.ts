/**
 * examples/pg-boss on the built package, against the real PostgreSQL the pg-boss tests use
 * (DATABASE_URL, otherwise postgres@127.0.0.1:5432/test): the web process acknowledges a delivery while
 * no worker runs (the event waits in PostgreSQL), the worker process then runs its handler once, and a
 * retry of the delivery is a duplicate. pg-boss's schema and the store's table are the test's own,
 * dropped afterwards.
 */
import pg from 'pg';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { afterAll, expect, test } from 'vitest';
import { sendHttp } from '../adapters/http-client.js';
import { type RunningExample, startExample } from './run-example.js';

const SECRET = 'whsec_example_test';
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
  await client.query(`DROP TABLE IF EXISTS "${table}"`);
  await client.end();
});

test('examples/pg-boss: the web process queues while no worker runs; the worker handles it once (built package)', async () => {
  const running: RunningExample[] = [];
  try {
    const web = startExample('examples/pg-boss/web.ts');
    running.push(web);
    const [, port] = await web.waitFor(/Listening on http:\/\/\S+:(\d+)\/webhooks/);
    const email = `ada+${Date.now()}@example.com`;
    const body = JSON.stringify(createTestEvent('user.created', { data: { email } }));
    const send = () =>
      sendHttp(`http://127.0.0.1:${port}/webhooks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-service-signature': signPayload(body, SECRET) },
        body: new TextEncoder().encode(body),
      });
    const first = await send();
    expect(first.status, first.body).toBe(200);
    expect(first.body).toBe('{"received":true}');

    const worker = startExample('examples/pg-boss/worker.ts');
    running.push(worker);
    let printed = '';
    worker.child.stdout?.on('data', (chunk: Buffer) => {
      printed += chunk.toString();
    });
    await worker.waitFor(/Worker ready on example-/);
    const [line] = await worker.waitFor(
      new RegExp(`user\\.created ${email.replace(/[.+]/g, '\\$&')} attempt 1, received \\S+`),
    );
    expect(line).toContain('attempt 1');
    const retry = await send();
    expect(retry.status).toBe(200);
    expect(retry.headers['x-webhook-duplicate']).toBe('true');
    // Once: a second run would print a second line (the worker polls every 500 ms).
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(printed.split('\n').filter((text) => text.startsWith(`user.created ${email} `))).toHaveLength(1);
  } finally {
    await Promise.all(running.map((example) => example.stop()));
  }
}, 60_000);
