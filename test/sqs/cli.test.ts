/**
 * `service-webhooks inbox --url <SQS queue URL>` on a real SQS (fauxqs): the engine follows from the
 * URL, the dead-letter queue from the queue's redrive policy, and stats, list, show, replay and
 * remove print the columns they print for BullMQ. `--endpoint` points the SDK at the emulator; the
 * credentials come from the SDK's usual environment variables, as for a user.
 */
import { createWebhooks, MemoryStore } from 'service-webhooks';
import { sqsInbox, startSqsWorker } from 'service-webhooks/sqs';
import { createTestEvent } from 'service-webhooks/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { runInbox } from '../../src/cli/inbox-command.js';
import { byEmail, expectCliRoundTrip, inboxCommand, RefusingCrm } from '../support/inbox-cli.js';
import { waitUntil } from '../support/wait-until.js';
import { createQueues, deliverTo, type Fauxqs, type Queues, SECRET, startSqs } from './support.js';

let sqs: Fauxqs;
let queues: Queues;
let closeWorker: () => Promise<void>;
const crm = new RefusingCrm(byEmail);
const saved = { ...process.env };
const cli = inboxCommand(() => ['--url', queues.queueUrl, '--endpoint', sqs.endpoint]);

beforeAll(async () => {
  Object.assign(process.env, {
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_REGION: 'us-east-1',
  });
  sqs = await startSqs();
  const client = sqs.client();
  queues = await createQueues(client, 'cli');
  const store = new MemoryStore();
  const webhooks = createWebhooks({ secret: SECRET, store });
  webhooks.onError(() => {});
  webhooks.on('user.created', crm.handler);
  const worker = startSqsWorker(webhooks, {
    client,
    queueUrl: queues.queueUrl,
    attempts: 1,
    waitTimeSeconds: 1,
    monitor: false,
  });
  await worker.waitUntilReady();
  closeWorker = () => worker.close();
  const door = createWebhooks({
    secret: SECRET,
    store,
    inbox: sqsInbox({ client, queueUrl: queues.queueUrl }),
  });
  for (const email of ['a@example.com', 'b@example.com']) {
    expect((await deliverTo(door, createTestEvent('user.created', { data: { email } }))).status).toBe(200);
  }
  await waitUntil(
    'both events dead-lettered',
    async () => (await cli('stats', '--json')).out.includes('"deadLettered":2'),
    20_000,
  );
});

afterAll(async () => {
  await closeWorker?.();
  await queues?.delete();
  await sqs?.stop();
  process.env = saved;
});

test('the engine follows from the queue URL; stats, list, show, replay and remove print the same columns as for BullMQ', () =>
  expectCliRoundTrip(cli, crm));

test('--engine sqs without a queue URL, and SQS flags on another engine, are usage errors', async () => {
  const io = { out: () => {}, err: () => {} };
  delete process.env.SQS_QUEUE_URL;
  await expect(runInbox(['stats', '--engine', 'sqs'], io)).rejects.toThrow(/SQS_QUEUE_URL/);
  await expect(runInbox(['stats', '--engine', 'sqs', '--url', 'redis://x'], io)).rejects.toThrow(
    /https:\/\/ queue URL/,
  );
  await expect(runInbox(['stats', '--url', 'ftp://x'], io)).rejects.toThrow(/Cannot tell the inbox's engine/);
  await expect(runInbox(['stats', '--url', queues.queueUrl, '--queue', 'q'], io)).rejects.toThrow(
    /--queue is not for SQS/,
  );
});
