/**
 * `service-webhooks inbox` against a real inbox: figures, the dead-letter list, show, replay (one and
 * --all) and remove, run in process as the CLI's dispatcher runs it; usage mistakes and an
 * unreachable Redis.
 */
import { createTestEvent } from 'service-webhooks/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { UsageError } from '../../src/cli/args.js';
import { runInbox } from '../../src/cli/inbox-command.js';
import { byEmail, inboxCommand, RefusingCrm } from '../support/inbox-cli.js';
import { RedisServer } from '../support/redis-servers.js';
import { waitUntil } from '../support/wait-until.js';
import { type Door, deliver, startDoor, startOneAttemptWorker, uniqueName } from './support.js';

let redis: RedisServer;
let door: Door;
let queueName: string;
let worker: { close(): Promise<void> } | undefined;
const crm = new RefusingCrm(byEmail);
const { handled } = crm;
const cli = inboxCommand(() => ['--redis', redis.url, '--queue', queueName]);

beforeAll(async () => {
  redis = await RedisServer.start();
  queueName = uniqueName('cli');
  const storePrefix = `${queueName}:store:`;
  door = await startDoor({ redisUrl: redis.url, queueName, storePrefix });
  worker = await startOneAttemptWorker({ redisUrl: redis.url, queueName, storePrefix, handler: crm.handler });
});

afterAll(async () => {
  await worker?.close();
  await door?.close();
  await redis?.destroy();
});

test('stats, list, show, replay, replay --all and remove', async () => {
  expect((await cli('list')).out).toBe('No dead-lettered events.');
  const events = [1, 2, 3].map((n) =>
    createTestEvent('user.created', { data: { email: `user${n}@example.com` } }),
  );
  for (const event of events) expect((await deliver(door.url, event)).status).toBe(200);
  await waitUntil(
    'three dead letters',
    async () => (await cli('stats', '--json')).out.includes('"deadLettered":3'),
    10_000,
  );

  const stats = await cli('stats');
  expect(stats.code).toBe(0);
  expect(stats.out).toMatch(/^dead-lettered 3$/m);
  expect(stats.out).toMatch(/^waiting {7}0$/m);

  const list = await cli('list');
  expect(list.code).toBe(0);
  expect(list.out.split('\n')[0]).toBe('3 dead-lettered events, newest first; 1 to 3:');
  for (const event of events) expect(list.out).toContain(`  user.created  ${event.id}  1 attempts  `);
  expect(list.out).toContain('handler_failed: crm.example refused user3@example.com');
  const lines = (await cli('list', '--json', '--limit', '2')).out.split('\n').map((line) => JSON.parse(line));
  expect(lines).toHaveLength(2);
  const [newest] = lines as { jobId: string; eventId: string }[];
  expect(newest!.eventId).toBe(events[2]!.id);

  const show = await cli('show', newest!.jobId);
  expect(show.code).toBe(0);
  expect(show.out).toContain(`event         user.created ${events[2]!.id}`);
  expect(show.out).toContain('last error    handler_failed: crm.example refused user3@example.com');
  expect(show.out).toMatch(/stack {9}Error: crm\.example refused/);
  expect(show.out).toContain(`"email":"user3@example.com"`);
  const missing = await cli('show', 'e.nothing');
  expect(missing.code).toBe(1);
  expect(missing.err).toContain('No dead-lettered event has the id e.nothing');

  crm.failing = false;
  const replay = await cli('replay', newest!.jobId);
  expect(replay.code).toBe(0);
  expect(replay.out).toMatch(new RegExp(`^replayed ${events[2]!.id}: \\S+ → r\\.\\S+ \\(replay id \\S+\\)$`));
  await waitUntil('the replay to run', () => handled.length === 1, 10_000);
  expect(handled).toEqual([events[2]!.id]);
  const again = await cli('replay', newest!.jobId);
  expect(again.code).toBe(1);
  expect(again.err).toContain('No inbox entry has the id');

  const oldest = (await cli('list', '--json')).out
    .split('\n')
    .map((line) => JSON.parse(line).jobId as string)
    .at(-1)!;
  const removed = await cli('remove', oldest);
  expect(removed).toMatchObject({ code: 0, out: `removed ${oldest}` });
  const all = await cli('replay', '--all');
  expect(all.code).toBe(0);
  expect(all.out).toContain(`replayed ${events[1]!.id}`);
  expect(all.out).toContain('1 dead-lettered events replayed.');
  await waitUntil('the last replay to run', () => handled.length === 2, 10_000);
  expect(handled.sort()).toEqual([events[1]!.id, events[2]!.id].sort());
  expect((await cli('list')).out).toBe('No dead-lettered events.');
  expect((await cli('remove', oldest)).code).toBe(1);
});

test('usage mistakes are usage errors; an unreachable Redis fails with a message', async () => {
  const io = { out: () => {}, err: () => {} };
  await expect(runInbox([], io)).rejects.toThrow(UsageError);
  await expect(runInbox(['purge'], io)).rejects.toThrow(/Unknown subcommand purge/);
  await expect(runInbox(['show'], io)).rejects.toThrow(/needs the dead letter's id/);
  await expect(runInbox(['replay', 'e.x', '--all'], io)).rejects.toThrow(/either an id or --all/);
  await expect(runInbox(['list', '--redis', 'http://x'], io)).rejects.toThrow(/redis:\/\//);
  await expect(runInbox(['list', '--limit', '0'], io)).rejects.toThrow(/--limit/);
  const help: string[] = [];
  expect(await runInbox(['--help'], { out: (line) => help.push(line), err: () => {} })).toBe(0);
  expect(help.join('\n')).toContain('Usage: service-webhooks inbox');

  const err: string[] = [];
  const started = performance.now();
  const code = await runInbox(['stats', '--redis', 'redis://127.0.0.1:1'], {
    out: () => {},
    err: (line) => err.push(line),
  });
  expect(code).toBe(1);
  expect(err.join('\n')).toContain('Could not reach the bullmq inbox at redis://127.0.0.1:1');
  expect(performance.now() - started).toBeLessThan(10_000);
});
