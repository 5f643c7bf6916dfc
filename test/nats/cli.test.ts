/**
 * `service-webhooks inbox --url nats://…` on a real NATS JetStream inbox: the engine follows from the
 * URL, and stats, list, show, replay and remove print the columns they print for the other engines.
 * Run in process as the CLI's dispatcher runs it; the CLI opens its own connection from the URL.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { createWebhooks, MemoryStore } from 'service-webhooks';
import { natsInbox, startNatsWorker } from 'service-webhooks/nats';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { runInbox } from '../../src/cli/inbox-command.js';
import { byEmail, expectCliRoundTrip, inboxCommand, RefusingCrm } from '../support/inbox-cli.js';
import { waitUntil } from '../support/wait-until.js';
import { connectNats, deleteInbox, NATS_URL, uniqueStream } from './support.js';

const SECRET = 'whsec_nats_cli';
const stream = uniqueStream('cli');
let connection: NatsConnection;
let closeWorker: () => Promise<void>;
const crm = new RefusingCrm(byEmail);
const cli = inboxCommand(() => ['--url', NATS_URL, '--queue', stream]);

beforeAll(async () => {
  connection = await connectNats();
  const store = new MemoryStore();
  const webhooks = createWebhooks({ secret: SECRET, store });
  webhooks.onError(() => {});
  webhooks.on('user.created', crm.handler);
  const worker = await startNatsWorker(webhooks, {
    connection,
    stream,
    attempts: 1,
    pollMs: 1_000,
    monitor: false,
  });
  closeWorker = () => worker.close();
  const door = createWebhooks({ secret: SECRET, store, inbox: natsInbox({ connection, stream }) });
  for (const email of ['a@example.com', 'b@example.com']) {
    const body = JSON.stringify(createTestEvent('user.created', { data: { email } }));
    const answer = await door.handle({ body, headers: { 'x-service-signature': signPayload(body, SECRET) } });
    expect(answer.status).toBe(200);
  }
  await waitUntil(
    'both events dead-lettered',
    async () => (await cli('stats', '--json')).out.includes('"deadLettered":2'),
    15_000,
  );
});

afterAll(async () => {
  await closeWorker?.();
  await deleteInbox(connection, stream);
  await connection?.close();
});

test('the engine follows from a nats:// URL; stats, list, show, replay and remove print the same columns as for BullMQ', () =>
  expectCliRoundTrip(cli, crm));

test('--engine nats takes NATS_URL; an unreachable server is a clear failure, exit code 1', async () => {
  const err: string[] = [];
  const code = await runInbox(['stats', '--engine', 'nats', '--url', 'nats://127.0.0.1:1'], {
    out: () => {},
    err: (line) => err.push(line),
  });
  expect(code).toBe(1);
  expect(err.join('\n')).toMatch(/^Could not reach the nats inbox at nats:\/\/127\.0\.0\.1:1: /);
});

test('a URL of another scheme with --engine nats is a usage error', async () => {
  await expect(
    runInbox(['stats', '--engine', 'nats', '--url', 'redis://127.0.0.1:6379'], {
      out: () => {},
      err: () => {},
    }),
  ).rejects.toThrow(/^The nats inbox needs a nats:\/\/ \(or tls:\/\/\) URL, got redis:\/\/127\.0\.0\.1:6379/);
});
