/**
 * docs/inbox/pg-boss.md's quick start, run as a reader runs it (in a project made as Getting started
 * says, with the page's install, the packed build for service-webhooks; saved and run as the page
 * says), against the
 * PostgreSQL on 127.0.0.1:5432 (database `test`) with a pg-boss schema and a store table of its own
 * (parallel CI runs never share them). The page promises: the door answers 200 before any handler ran,
 * the worker handles the event once, the same event again is a duplicate, and the process ends.
 */
import pg from 'pg';
import { afterAll, expect, test } from 'vitest';
import { commandOnPage, docBlock, gettingStartedProject, installBlock } from './support.js';

const PAGE = 'docs/inbox/pg-boss.md';

const DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';
const suffix = crypto.randomUUID().slice(0, 8);
const schema = `docs_pgboss_${suffix}`;
const table = `docs_inbox_events_${suffix}`;

afterAll(async () => {
  const pool = new pg.Pool({ connectionString: DATABASE_URL });
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.query(`DROP TABLE IF EXISTS "${table}", "${table}_resources"`);
  await pool.end();
});

test('the pg-boss quick start queues the event, the worker handles it once, the copy is a duplicate', async () => {
  const project = await gettingStartedProject('inbox-pg-boss', installBlock(PAGE));
  try {
    project.save(docBlock(PAGE, 'inbox-pg-boss'), 'inbox-pg-boss.ts');
    const { stdout, stderr } = await project.shell(commandOnPage(PAGE, 'npx tsx inbox-pg-boss.ts'), {
      DATABASE_URL,
      PGBOSS_SCHEMA: schema,
      STORE_TABLE: table,
    });
    expect(stderr).not.toMatch(/pg-boss:|Error/);
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toBe('door: 200 {"received":true}');
    expect(lines[1]).toMatch(/^worker: handled evt_\S+ for ada@example\.com, attempt 1$/);
    expect(lines[2]).toBe('door, same event again: 200, duplicate: true');
  } finally {
    project.remove();
  }
}, 180_000);
