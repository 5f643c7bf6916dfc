/**
 * `service-webhooks inbox --url amqp://…` on a real RabbitMQ inbox: the engine follows from the URL,
 * and stats, list, show, replay and remove print the columns they print for BullMQ; and the inbox panel
 * of `service-webhooks dev` shows, replays and removes RabbitMQ dead letters through the same admin.
 * Run in process as the CLI's dispatcher runs it; the CLI opens its own connection.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChannelModel } from 'amqplib';
import { createWebhooks, type DeadLetter, MemoryStore } from 'service-webhooks';
import { rabbitMQInbox, rabbitMQInboxAdmin, startRabbitMQWorker } from 'service-webhooks/rabbitmq';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { runInbox } from '../../src/cli/inbox-command.js';
import type { InboxView } from '../../src/dashboard/api-types.js';
import { startDevServer } from '../../src/dashboard/dev-server.js';
import { devApi, writeStandInPage } from '../dashboard/support.js';
import { byEmail, expectCliRoundTrip, inboxCommand, RefusingCrm } from '../support/inbox-cli.js';
import { waitUntil } from '../support/wait-until.js';
import { AMQP_URL, deleteQueues, openConnection, uniqueQueue } from './support.js';

const SECRET = 'whsec_rabbitmq_cli';
const queue = uniqueQueue('cli');
let connection: ChannelModel;
let closeAll: () => Promise<void>;
let deliverOne: (email: string) => Promise<void>;
const crm = new RefusingCrm(byEmail);
const { handled } = crm;
const cli = inboxCommand(() => ['--url', AMQP_URL, '--queue', queue]);

beforeAll(async () => {
  connection = await openConnection();
  const store = new MemoryStore();
  const webhooks = createWebhooks({ secret: SECRET, store });
  webhooks.onError(() => {});
  webhooks.on('user.created', crm.handler);
  const worker = startRabbitMQWorker(webhooks, { url: AMQP_URL, queue, attempts: 1, monitor: false });
  await worker.waitUntilReady();
  const inbox = rabbitMQInbox({ url: AMQP_URL, queue });
  const door = createWebhooks({ secret: SECRET, store, inbox });
  deliverOne = async (email) => {
    const body = JSON.stringify(createTestEvent('user.created', { data: { email } }));
    const answer = await door.handle({ body, headers: { 'x-service-signature': signPayload(body, SECRET) } });
    expect(answer.status).toBe(200);
  };
  closeAll = async () => {
    await worker.close();
    await inbox.close();
  };
});

afterAll(async () => {
  await closeAll?.();
  await deleteQueues(connection, queue);
  await connection?.close();
});

test('the engine follows from an amqp:// URL; stats, list, show, replay and remove print the same columns as for BullMQ', async () => {
  crm.failing = true;
  for (const email of ['a@example.com', 'b@example.com']) await deliverOne(email);
  await waitUntil('both events dead-lettered', async () =>
    (await cli('stats', '--json')).out.includes('"deadLettered":2'),
  );
  await expectCliRoundTrip(cli, crm);
});

test('an unreachable broker is a clear failure, exit code 1', async () => {
  const err: string[] = [];
  const code = await runInbox(['stats', '--url', 'amqp://guest:guest@127.0.0.1:9'], {
    out: () => {},
    err: (line) => err.push(line),
  });
  expect(code).toBe(1);
  expect(err.join('\n')).toMatch(
    /^Could not reach the rabbitmq inbox at amqp:\/\/guest:\*\*\*@127\.0\.0\.1:9: /,
  );
});

test('the dev dashboard’s inbox panel shows, replays and removes RabbitMQ dead letters', async () => {
  const token = 'rabbitmq-inbox-panel';
  const folder = await mkdtemp(join(tmpdir(), 'dev-inbox-rabbitmq-'));
  await writeStandInPage(folder);
  const admin = rabbitMQInboxAdmin({ url: AMQP_URL, queue });
  const dev = await startDevServer({
    // The sandbox's deliveries are not used here: the events reach the door directly.
    forward: 'http://127.0.0.1:9/webhooks',
    secret: SECRET,
    port: 0,
    assetsFolder: folder,
    token,
    inbox: admin,
  });
  try {
    crm.failing = true;
    for (const email of ['c@example.com', 'd@example.com']) await deliverOne(email);
    await waitUntil('both dead letters on the panel', async () => {
      const view = await devApi<InboxView>(dev.url, token, 'GET', '/inbox');
      return view.body.stats.deadLettered === 2 && view.body.dead_letters.length === 2;
    });
    const view = await devApi<InboxView>(dev.url, token, 'GET', '/inbox');
    expect(view.body.engine).toBe('rabbitmq');
    const [first, second] = view.body.dead_letters;
    const shown = await devApi<DeadLetter>(
      dev.url,
      token,
      'GET',
      `/inbox/dead-letters/${encodeURIComponent(first!.jobId)}`,
    );
    expect(shown.body).toMatchObject({ eventId: first!.eventId, eventType: 'user.created', attempts: 1 });
    crm.failing = false;
    const replayed = await devApi(
      dev.url,
      token,
      'POST',
      `/inbox/dead-letters/${encodeURIComponent(first!.jobId)}/replay`,
    );
    expect(replayed).toMatchObject({
      status: 202,
      body: { eventId: first!.eventId, replayOf: first!.jobId },
    });
    await waitUntil('the replay to run', () => handled.includes(first!.eventId));
    const path = `/inbox/dead-letters/${encodeURIComponent(second!.jobId)}`;
    expect((await devApi(dev.url, token, 'DELETE', path)).body).toEqual({ removed: true });
    const after = await devApi<InboxView>(dev.url, token, 'GET', '/inbox');
    expect(after.body.stats.deadLettered).toBe(0);
    expect(after.body.dead_letters).toEqual([]);
  } finally {
    await dev.close();
    await admin.close();
    await rm(folder, { recursive: true, force: true });
  }
});
