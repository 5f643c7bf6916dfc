/**
 * `service-webhooks inbox --url postgres://…` on a real pg-boss inbox: the engine follows from the
 * URL, and stats, list, show, replay and remove print the columns they print for BullMQ. Run in
 * process as the CLI's dispatcher runs it; the CLI opens its own pg-boss (the installed one).
 */
import { createWebhooks, MemoryStore } from 'service-webhooks';
import { pgBossInbox, startPgBossWorker } from 'service-webhooks/pg-boss';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { runInbox } from '../../src/cli/inbox-command.js';
import { byEmail, expectCliRoundTrip, inboxCommand, RefusingCrm } from '../support/inbox-cli.js';
import { waitUntil } from '../support/wait-until.js';
import {
  BOSS_VERSIONS,
  DATABASE_URL,
  dropSchema,
  type TestBoss,
  uniqueQueue,
  uniqueSchema,
} from './support.js';

const SECRET = 'whsec_pgboss_cli';
const schema = uniqueSchema();
const queue = uniqueQueue('cli');
let boss: TestBoss;
let closeWorker: () => Promise<void>;
const crm = new RefusingCrm(byEmail);
const cli = inboxCommand(() => ['--url', DATABASE_URL, '--schema', schema, '--queue', queue]);

beforeAll(async () => {
  boss = await BOSS_VERSIONS[0]!.start(schema);
  const store = new MemoryStore();
  const webhooks = createWebhooks({ secret: SECRET, store });
  webhooks.onError(() => {});
  webhooks.on('user.created', crm.handler);
  const worker = await startPgBossWorker(webhooks, {
    boss,
    queue,
    schema,
    attempts: 1,
    pollIntervalMs: 50,
    monitor: false,
  });
  closeWorker = () => worker.close();
  const door = createWebhooks({ secret: SECRET, store, inbox: pgBossInbox({ boss, queue }) });
  for (const email of ['a@example.com', 'b@example.com']) {
    const body = JSON.stringify(createTestEvent('user.created', { data: { email } }));
    const answer = await door.handle({ body, headers: { 'x-service-signature': signPayload(body, SECRET) } });
    expect(answer.status).toBe(200);
  }
  await waitUntil('both events dead-lettered', async () =>
    (await cli('stats', '--json')).out.includes('"deadLettered":2'),
  );
});

afterAll(async () => {
  await closeWorker?.();
  await boss?.stop({ graceful: false, wait: true });
  await dropSchema(schema);
});

test('the engine follows from a postgres:// URL; stats, list, show, replay and remove print the same columns as for BullMQ', () =>
  expectCliRoundTrip(cli, crm));

test('an unreachable database is a clear failure, exit code 1', async () => {
  const err: string[] = [];
  const code = await runInbox(['stats', '--url', 'postgres://postgres@127.0.0.1:1/test'], {
    out: () => {},
    err: (line) => err.push(line),
  });
  expect(code).toBe(1);
  expect(err.join('\n')).toMatch(
    /^Could not reach the pg-boss inbox at postgres:\/\/postgres@127\.0\.0\.1:1\/test: /,
  );
});

test('--schema naming a schema that does not exist says so, exit code 1', async () => {
  const missing = uniqueSchema();
  const err: string[] = [];
  const code = await runInbox(['stats', '--url', DATABASE_URL, '--schema', missing], {
    out: () => {},
    err: (line) => err.push(line),
  });
  expect(code).toBe(1);
  expect(err.join('\n')).toBe(
    `The pg-boss schema ${missing} does not exist in the database at ${DATABASE_URL}: check --schema (pg-boss's \`schema\` option; default pgboss).`,
  );
});

test('--schema that is not a name is a usage error, before any SQL runs', async () => {
  const started = Date.now();
  await expect(
    runInbox(['stats', '--url', DATABASE_URL, '--schema', 'x;select pg_sleep(2)'], {
      out: () => {},
      err: () => {},
    }),
  ).rejects.toThrow(/^--schema x;select pg_sleep\(2\): /);
  expect(Date.now() - started).toBeLessThan(2_000);
});
