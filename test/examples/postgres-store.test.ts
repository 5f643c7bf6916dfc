/**
 * examples/postgres-store against the real PostgreSQL the store tests use (DATABASE_URL, otherwise
 * postgres@127.0.0.1:5432/test), on the built package; its table is dropped afterwards.
 */
import pg from 'pg';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { afterAll, expect, test } from 'vitest';
import { sendHttp } from '../adapters/http-client.js';
import { startExample } from './run-example.js';

const connectionString = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const table = `webhook_events_example_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
const pool = new pg.Pool({ connectionString, max: 2 });
// startExample hands the example this process's environment (each test file runs in its own worker).
process.env.DATABASE_URL = connectionString;
process.env.WEBHOOK_TABLE = table;

afterAll(async () => {
  await pool.query(`DROP TABLE IF EXISTS "${table}", "${table}_resources"`);
  await pool.end();
});

test('examples/postgres-store: a delivery runs its handler once, a retry is a duplicate, the row is in PostgreSQL (built package)', async () => {
  const example = startExample('examples/postgres-store/server.ts');
  try {
    const [, port] = await example.waitFor(/Listening on http:\/\/\S+:(\d+)\/webhooks/);
    const email = `grace+${Date.now()}@example.com`;
    const event = createTestEvent('user.created', { data: { email } });
    const body = JSON.stringify(event);
    const send = () =>
      sendHttp(`http://127.0.0.1:${port}/webhooks`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-service-signature': signPayload(body, 'whsec_example_test'),
        },
        body: new TextEncoder().encode(body),
      });
    const first = await send();
    expect(first.status, first.body).toBe(200);
    await example.waitFor(new RegExp(`user\\.created ${email.replace(/[.+]/g, '\\$&')}`));
    const retry = await send();
    expect(retry.status).toBe(200);
    expect(retry.headers['x-webhook-duplicate']).toBe('true');
    const { rows } = await pool.query<{ event_id: string; state: string }>(
      `SELECT event_id, state FROM "${table}"`,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.event_id.endsWith(`:${event.id}`)).toBe(true);
    expect(rows[0]!.state).toBe('completed');
  } finally {
    await example.stop();
  }
});
