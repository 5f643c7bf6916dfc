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
import { byEmail, inboxCommand, RefusingCrm } from '../support/inbox-cli.js';
import {
  BOSS_VERSIONS,
  DATABASE_URL,
  dropSchema,
  type TestBoss,
  uniqueQueue,
  uniqueSchema,
  waitUntil,
} from './support.js';

const SECRET = 'whsec_pgboss_cli';
const schema = uniqueSchema();
const queue = uniqueQueue('cli');
let boss: TestBoss;
let closeWorker: () => Promise<void>;
const crm = new RefusingCrm(byEmail);
const { handled } = crm;
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

test('the engine follows from a postgres:// URL; stats, list, show, replay and remove print the same columns as for BullMQ', async () => {
  const stats = await cli('stats');
  expect(stats.code).toBe(0);
  expect(stats.out).toMatch(
    /^waiting {7}0\nrunning {7}0\nretrying {6}0\nthrottled {5}0\nrate-limited {2}0\ndead-lettered 2\nnext waited {3}-$/,
  );

  const list = await cli('list');
  expect(list.code).toBe(0);
  const lines = list.out.split('\n');
  expect(lines[0]).toBe('2 dead-lettered events, newest first; 1 to 2:');
  for (const line of lines.slice(1)) {
    expect(line).toMatch(
      /^\S+ {2}user\.created {2}evt_\S+ {2}1 attempts {2}\d{4}-\d\d-\d\dT\S+Z {2}handler_failed: crm\.example refused/,
    );
  }
  const [newest, oldest] = lines.slice(1).map((line) => line.split('  ')[0]!);

  const show = await cli('show', newest!);
  expect(show.code).toBe(0);
  expect(show.out).toMatch(/^id {12}\S+/);
  expect(show.out).toContain('last error    handler_failed: crm.example refused');
  expect(show.out).toContain('"type":"user.created"');

  crm.failing = false;
  const replay = await cli('replay', newest!);
  expect(replay.code).toBe(0);
  expect(replay.out).toMatch(/^replayed evt_\S+: \S+ → \S+ \(replay id \S+\)$/);
  await waitUntil('the replay to run', () => handled.length === 1);
  const again = await cli('replay', newest!);
  expect(again.code).toBe(1);
  expect(again.err).toMatch(/Run service-webhooks inbox list\.$/);

  expect(await cli('remove', oldest!)).toMatchObject({ code: 0, out: `removed ${oldest}` });
  expect((await cli('list')).out).toBe('No dead-lettered events.');
  expect(handled).toHaveLength(1);
});

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
