/**
 * Issue 45, item 3, against fauxqs: whoever may `sqs:SendMessage` to the inbox's queue (an IAM
 * permission, often broader than holding the webhook secret) cannot make a handler act on an event the
 * service never sent. A message made by hand, a copy of the door's message with an edited body, one
 * with a forged `sw-attempt` (999) and one with a forged `sw-traceparent` are each dead-lettered on
 * their first run as `unauthenticated_inbox_entry`, reported, with no handler run; the door's own run,
 * and a retry copy carries the attempt the worker sealed.
 */
import { type Message, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { EventDeadLetteredError, MemoryStore } from 'service-webhooks';
import {
  ATTRIBUTE,
  type FailureRecord,
  type SqsWorker,
  sqsInbox,
  startSqsWorker,
} from 'service-webhooks/sqs';
import { createTestEvent } from 'service-webhooks/testing';
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import { waitUntil } from '../support/wait-until.js';
import {
  createQueues,
  deliverTo,
  type Fauxqs,
  type Queues,
  type Receiver,
  receiveAll,
  receiver,
  startSqs,
} from './support.js';

let sqs: Fauxqs;
let client: SQSClient;
const cleanup: (() => Promise<void>)[] = [];

beforeAll(async () => {
  sqs = await startSqs();
  client = sqs.client();
});
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});
afterAll(async () => {
  client?.destroy();
  await sqs?.stop();
});

async function queues(label: string): Promise<Queues> {
  const made = await createQueues(client, label);
  cleanup.push(() => made.delete());
  return made;
}

function worker(webhooks: Receiver['webhooks'], queueUrl: string): SqsWorker {
  const started = startSqsWorker(webhooks, {
    client,
    queueUrl,
    attempts: 3,
    backoff: [1_000],
    waitTimeSeconds: 1,
    visibilityTimeoutSeconds: 4,
    monitor: false,
  });
  cleanup.push(() => started.close(true));
  return started;
}

const payment = (amount: number) => {
  const event = createTestEvent('payment.succeeded');
  return { ...event, data: { ...event.data, amount } };
};

/** The door's message of each event, taken off the queue (and deleted by the receive's end). */
async function doorMessages(queueUrl: string, count: number): Promise<Map<string, Message>> {
  const messages = await receiveAll(client, queueUrl, { max: count, visibility: 600 });
  expect(messages).toHaveLength(count);
  return new Map(messages.map((message) => [JSON.parse(message.Body!).event.id as string, message]));
}

/** Send `message` again, with `body` and `attributes` changed as an attacker with SendMessage could. */
async function resend(
  queueUrl: string,
  message: Message,
  change: { body?: (body: Record<string, unknown>) => unknown; attributes?: Record<string, string> } = {},
) {
  const body = change.body ? JSON.stringify(change.body(JSON.parse(message.Body!))) : message.Body!;
  const attributes = { ...message.MessageAttributes };
  for (const [name, value] of Object.entries(change.attributes ?? {}))
    attributes[name] = { DataType: name === ATTRIBUTE.attempt ? 'Number' : 'String', StringValue: value };
  await client.send(
    new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body, MessageAttributes: attributes }),
  );
}

async function deadLetters(url: string) {
  return (await receiveAll(client, url, { visibility: 0 })).map((message) => ({
    eventId: JSON.parse(message.Body!)?.event?.id as string | undefined,
    failure: JSON.parse(message.MessageAttributes![ATTRIBUTE.failure]!.StringValue!) as FailureRecord,
  }));
}

async function expectRefused(consumer: Receiver, q: Queues, count: number) {
  const deadLettered = () => consumer.errors.filter((error) => error instanceof EventDeadLetteredError);
  await waitUntil(
    'the forged messages to be dead-lettered and reported',
    () => deadLettered().length === count,
    20_000,
  );
  const letters = await deadLetters(q.deadLetterQueueUrl);
  expect(letters).toHaveLength(count);
  for (const { failure } of letters) {
    expect(failure.reason).toBe('poison');
    expect(failure.lastError).toMatch(/^unauthenticated_inbox_entry: /);
  }
  expect(consumer.errors.filter((error) => error.code === 'unauthenticated_inbox_entry')).toHaveLength(count);
}

test('a message made by hand (payment.succeeded, 999999999) runs no handler: dead-lettered at once, reported', async () => {
  const q = await queues('forged');
  const forged = payment(999999999);
  await client.send(
    new SendMessageCommand({
      QueueUrl: q.queueUrl,
      MessageBody: JSON.stringify({ event: forged, receivedAt: Date.now(), secretIndex: 0 }),
      MessageAttributes: { [ATTRIBUTE.attempt]: { DataType: 'Number', StringValue: '1' } },
    }),
  );
  const consumer = receiver();
  await worker(consumer.webhooks, q.queueUrl).waitUntilReady();
  await expectRefused(consumer, q, 1);
  expect(consumer.runs).toEqual([]);
});

test("copies of the door's messages (an edited body, sw-attempt 999, a forged sw-traceparent) run no handler; the door's own runs", async () => {
  const q = await queues('edited');
  const door = receiver({ inbox: sqsInbox({ client, queueUrl: q.queueUrl }) });
  const [edited, reattempted, retraced, genuine] = [payment(1), payment(2), payment(3), payment(4)];
  for (const event of [edited, reattempted, retraced, genuine])
    expect((await deliverTo(door.webhooks, event)).status).toBe(200);
  const messages = await doorMessages(q.queueUrl, 4);
  await resend(q.queueUrl, messages.get(edited.id)!, {
    body: (body) => ({ ...body, event: { ...edited, data: { ...edited.data, amount: 999999999 } } }),
  });
  await resend(q.queueUrl, messages.get(reattempted.id)!, { attributes: { [ATTRIBUTE.attempt]: '999' } });
  await resend(q.queueUrl, messages.get(retraced.id)!, {
    // Flags 00: an attacker's trace, with sampling switched off.
    attributes: { [ATTRIBUTE.traceparent]: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00' },
  });
  await resend(q.queueUrl, messages.get(genuine.id)!);

  const consumer = receiver();
  await worker(consumer.webhooks, q.queueUrl).waitUntilReady();
  await expectRefused(consumer, q, 3);
  await waitUntil('the genuine payment to run', () => consumer.runs.length === 1, 20_000);
  expect(consumer.runs).toEqual([{ eventId: genuine.id, attempt: 1 }]);
});

test('a retry copy carries the attempt the worker sealed (sw-attempt-seal): ctx.attempt 2', async () => {
  const q = await queues('retry');
  const store = new MemoryStore();
  const door = receiver({ store, inbox: sqsInbox({ client, queueUrl: q.queueUrl }) });
  const consumer = receiver({
    store,
    behaviour: (_event, attempt) => {
      if (attempt === 1) throw new Error('downstream down for a moment');
    },
  });
  expect((await deliverTo(door.webhooks, payment(5))).status).toBe(200);
  await worker(consumer.webhooks, q.queueUrl).waitUntilReady();
  await waitUntil('the second attempt', () => consumer.runs.length === 2, 20_000);
  expect(consumer.runs.map((run) => run.attempt)).toEqual([1, 2]);
  expect(consumer.errors.filter((error) => error.code === 'unauthenticated_inbox_entry')).toEqual([]);
});
