/**
 * docs/stores/postgres.md's local recipe, run as a reader runs it (in a project made as Getting started
 * says, with the page's install, the packed build for service-webhooks; saved and run as the page says), against the
 * PostgreSQL on 127.0.0.1:5432 (database `test`) with a table of its own (parallel CI runs never share
 * rows). The page promises: the table is created, the handler runs once, the same event again is a
 * duplicate, and the event's row is `completed`.
 */
import pg from 'pg';
import { afterAll, expect, test } from 'vitest';
import {
  commandOnPage,
  docBlock,
  expectHandledOnceThenDuplicate,
  gettingStartedProject,
  installBlock,
} from './support.js';

const PAGE = 'docs/stores/postgres.md';

const DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';
const table = `docs_events_${crypto.randomUUID().slice(0, 8)}`;
const pool = new pg.Pool({ connectionString: DATABASE_URL });

afterAll(async () => {
  await pool.query(`DROP TABLE IF EXISTS "${table}", "${table}_resources"`);
  await pool.end();
});

test('the PostgreSQL recipe creates the table, handles the event once, then answers it as a duplicate', async () => {
  const project = await gettingStartedProject('stores-postgres', installBlock(PAGE));
  try {
    project.save(docBlock(PAGE, 'postgres-local'), 'postgres-local.ts');
    const { stdout, stderr } = await project.shell(commandOnPage(PAGE, 'npx tsx postgres-local.ts'), {
      DATABASE_URL,
      STORE_TABLE: table,
    });
    expect(stderr).toBe('');
    const eventId = expectHandledOnceThenDuplicate(stdout);
    const { rows } = await pool.query(`SELECT event_id, token, state FROM "${table}"`);
    expect(rows).toHaveLength(1);
    expect(rows[0].event_id).toContain(eventId);
    expect(rows[0]).toMatchObject({ state: 'completed', token: null });
  } finally {
    project.remove();
  }
}, 180_000);
