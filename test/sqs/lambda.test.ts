/**
 * sqsHandler fed real SQS record shapes, built from messages received from fauxqs as an event source
 * mapping would (attributes, messageAttributes with stringValue, eventSourceARN); the test plays the
 * mapping's part and deletes the records the answer does not list. Flow control keeps its shared state
 * on a real Redis (REDIS_URL, or a server of the test's own).
 */
import {
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { Redis } from 'ioredis';
import { createWebhooks, MemoryStore, RateLimitedError } from 'service-webhooks';
import { RedisFlowControl } from 'service-webhooks/redis';
import { ATTRIBUTE, sqsHandler, sqsInbox } from 'service-webhooks/sqs';
import { createTestEvent } from 'service-webhooks/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startStandalone } from '../support/redis-servers.js';
import { sealed } from '../support/sealed-entry.js';
import { waitUntil } from '../support/wait-until.js';
import {
  createQueues,
  deliverTo,
  type Fauxqs,
  receiveAll,
  receiver,
  SECRET,
  sqsClient,
  startSqs,
  uniqueName,
} from './support.js';

let sqs: Fauxqs;
let client: SQSClient;

beforeAll(async () => {
  sqs = await startSqs();
  client = sqs.client();
});
afterAll(async () => {
  client?.destroy();
  await sqs?.stop();
});

/** A received message as Lambda's SQS event source mapping hands it to a function. */
function recordOf(message: Message, arn: string): SQSRecord {
  const system = message.Attributes ?? {};
  return {
    messageId: message.MessageId!,
    receiptHandle: message.ReceiptHandle!,
    body: message.Body!,
    attributes: {
      ApproximateReceiveCount: system.ApproximateReceiveCount ?? '1',
      SentTimestamp: system.SentTimestamp ?? String(Date.now()),
      SenderId: system.SenderId ?? 'AIDAEXAMPLE',
      ApproximateFirstReceiveTimestamp: system.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
      // A FIFO queue's records carry these too.
      ...(system.MessageGroupId === undefined
        ? {}
        : {
            MessageGroupId: system.MessageGroupId,
            MessageDeduplicationId: system.MessageDeduplicationId!,
            SequenceNumber: system.SequenceNumber!,
          }),
    },
    messageAttributes: Object.fromEntries(
      Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [
        name,
        {
          stringValue: value.StringValue,
          dataType: value.DataType!,
          stringListValues: [],
          binaryListValues: [],
        },
      ]),
    ),
    md5OfBody: message.MD5OfBody!,
    eventSource: 'aws:sqs',
    eventSourceARN: arn,
    awsRegion: 'us-east-1',
  };
}

async function arnOf(queueUrl: string): Promise<string> {
  const { Attributes } = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
  );
  return Attributes!.QueueArn!;
}

/** One poll of the mapping: receive, invoke, delete what the answer does not list. */
async function invoke(handler: ReturnType<typeof sqsHandler>, queueUrl: string, arn: string) {
  const messages = await receiveAll(client, queueUrl, { visibility: 10 });
  const event: SQSEvent = { Records: messages.map((message) => recordOf(message, arn)) };
  const answer = await handler(event);
  const failed = new Set(answer.batchItemFailures.map((failure) => failure.itemIdentifier));
  for (const record of event.Records) {
    if (!failed.has(record.messageId)) {
      await client.send(
        new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: record.receiptHandle }),
      );
    }
  }
  return { event, answer };
}

test('a batch: handled and retried records are left to the mapping to delete; only the deferred one is listed', async () => {
  const q = await createQueues(client, 'lambda');
  const arn = await arnOf(q.queueUrl);
  const store = new MemoryStore();
  const leases = { leaseSeconds: 3, handlerTimeoutMs: 2_000 };
  const door = receiver({ store, inbox: sqsInbox({ client, queueUrl: q.queueUrl }), receiver: leases });
  const consumer = receiver({
    store,
    receiver: leases,
    behaviour: (event) => {
      if (event.id === 'evt_l_fail') throw new Error('downstream 500');
    },
  });
  const events = ['evt_l_ok', 'evt_l_fail', 'evt_l_held'].map((id) =>
    createTestEvent('user.created', { id }),
  );
  for (const event of events) expect((await deliverTo(door.webhooks, event)).status).toBe(200);
  // evt_l_held's claim is held by a run elsewhere.
  let release: () => void = () => {};
  const holder = receiver({
    store,
    receiver: leases,
    behaviour: () =>
      new Promise<void>((resolve) => {
        release = resolve;
      }),
  });
  const holding = holder.webhooks.process(
    await sealed({ event: events[2]!, receivedAt: Date.now(), secretIndex: 0 }, SECRET),
    { attempt: 1 },
  );
  await waitUntil('the holder to run', () => holder.runs.length === 1, 5_000);

  const handler = sqsHandler(consumer.webhooks, { client, attempts: 3, backoff: [1_000] });
  const { event, answer } = await invoke(handler, q.queueUrl, arn);
  expect(event.Records).toHaveLength(3);
  const held = event.Records.find((record) => JSON.parse(record.body).event.id === 'evt_l_held')!;
  expect(answer.batchItemFailures).toEqual([{ itemIdentifier: held.messageId }]);
  expect(consumer.runs.map((run) => run.eventId).sort()).toEqual(['evt_l_fail', 'evt_l_ok']);
  release();
  await holding;

  // The failed one comes back as a copy carrying attempt 2, after the schedule's delay.
  await new Promise((resolve) => setTimeout(resolve, 1_200));
  const [copy, ...others] = await receiveAll(client, q.queueUrl, { visibility: 0 });
  expect(others).toEqual([]);
  expect(JSON.parse(copy!.Body!).event.id).toBe('evt_l_fail');
  expect(copy!.MessageAttributes?.[ATTRIBUTE.attempt]?.StringValue).toBe('2');
  const second = await invoke(handler, q.queueUrl, arn);
  expect(second.answer.batchItemFailures).toEqual([]);
  expect(consumer.runs.filter((run) => run.eventId === 'evt_l_fail').map((run) => run.attempt)).toEqual([
    1, 2,
  ]);
  await q.delete();
});

test('the last attempt goes to the dead-letter queue named by the RedrivePolicy, and is not listed', async () => {
  const q = await createQueues(client, 'lambda-dlq');
  const arn = await arnOf(q.queueUrl);
  const store = new MemoryStore();
  const door = receiver({ store, inbox: sqsInbox({ client, queueUrl: q.queueUrl }) });
  const consumer = receiver({
    store,
    behaviour: () => {
      throw new Error('always');
    },
  });
  await deliverTo(door.webhooks, createTestEvent('user.created', { id: 'evt_l_dead' }));
  const handler = sqsHandler(consumer.webhooks, { client, attempts: 1 });
  const { answer } = await invoke(handler, q.queueUrl, arn);
  expect(answer.batchItemFailures).toEqual([]);
  expect(consumer.errors.map((error) => error.code)).toContain('event_dead_lettered');
  const letters = await receiveAll(client, q.deadLetterQueueUrl, { visibility: 0 });
  expect(letters.map((letter) => JSON.parse(letter.Body!).event.id)).toEqual(['evt_l_dead']);
  expect(JSON.parse(letters[0]!.MessageAttributes![ATTRIBUTE.failure]!.StringValue!)).toMatchObject({
    attempts: 1,
  });
  await q.delete();
});

test('a record whose retry cannot be written is listed, so SQS hands it back', async () => {
  const q = await createQueues(client, 'lambda-down');
  const arn = await arnOf(q.queueUrl);
  const store = new MemoryStore();
  const door = receiver({ store, inbox: sqsInbox({ client, queueUrl: q.queueUrl }) });
  const consumer = receiver({
    store,
    behaviour: () => {
      throw new Error('fails');
    },
  });
  await deliverTo(door.webhooks, createTestEvent('user.created', { id: 'evt_l_down' }));
  const messages = await receiveAll(client, q.queueUrl, { visibility: 10 });
  // A function whose SQS client cannot reach SQS (its retry write fails).
  const down = sqsClient('http://127.0.0.1:9');
  const handler = sqsHandler(consumer.webhooks, {
    client: down,
    queueUrl: q.queueUrl,
    deadLetterQueueUrl: q.deadLetterQueueUrl,
    attempts: 3,
    backoff: [1_000],
  });
  const answer = await handler({ Records: messages.map((message) => recordOf(message, arn)) });
  expect(answer.batchItemFailures).toEqual([{ itemIdentifier: messages[0]!.MessageId }]);
  down.destroy();
  await q.delete();
});

test('a FIFO batch runs each group in order; after a record that must come back, the rest of its group comes back unrun', async () => {
  // fauxqs hands out one message of a FIFO group at a time, where SQS gives a batch several: the
  // batch is made of real messages of a standard queue, carrying the attributes a FIFO record has.
  const q = await createQueues(client, 'lambda-fifo');
  const arn = await arnOf(q.queueUrl);
  const store = new MemoryStore();
  const leases = { leaseSeconds: 3, handlerTimeoutMs: 2_000 };
  const door = receiver({ store, receiver: leases, inbox: sqsInbox({ client, queueUrl: q.queueUrl }) });
  const consumer = receiver({ store, receiver: leases });
  const events = ['evt_f1', 'evt_f2', 'evt_f3', 'evt_other'].map((id) =>
    createTestEvent('user.created', { id }),
  );
  for (const event of events) expect((await deliverTo(door.webhooks, event)).status).toBe(200);
  // The group's first event is held by a run elsewhere.
  let release: () => void = () => {};
  const holder = receiver({
    store,
    receiver: leases,
    behaviour: () =>
      new Promise<void>((resolve) => {
        release = resolve;
      }),
  });
  const holding = holder.webhooks.process(
    await sealed({ event: events[0]!, receivedAt: Date.now(), secretIndex: 0 }, SECRET),
    { attempt: 1 },
  );
  await waitUntil('the holder to run', () => holder.runs.length === 1, 5_000);
  const messages = await receiveAll(client, q.queueUrl, { visibility: 10 });
  const idOf = (record: SQSRecord) => JSON.parse(record.body).event.id as string;
  const records = messages
    .map((message) => recordOf(message, arn))
    .sort((a, b) => idOf(a).localeCompare(idOf(b)))
    .map((record, n) => ({
      ...record,
      attributes: {
        ...record.attributes,
        MessageGroupId: idOf(record) === 'evt_other' ? 'account-2' : 'account-1',
        MessageDeduplicationId: `dedup-${n}`,
        SequenceNumber: String(n + 1),
      },
    }));
  expect(records.map(idOf)).toEqual(['evt_f1', 'evt_f2', 'evt_f3', 'evt_other']);
  const handler = sqsHandler(consumer.webhooks, { client, attempts: 3, backoff: [1_000] });
  const answer = await handler({ Records: records });
  expect(answer.batchItemFailures.map((failure) => failure.itemIdentifier).sort()).toEqual(
    records
      .slice(0, 3)
      .map((record) => record.messageId)
      .sort(),
  );
  // The other group ran; nothing of account-1 ran after its held first record.
  expect(consumer.runs).toEqual([{ eventId: 'evt_other', attempt: 1 }]);
  release();
  await holding;
  await q.delete();
});

test('flow control: a rate shared by two function instances runs what it allows; the rest is listed, hidden, and runs later at attempt 1', async () => {
  const q = await createQueues(client, 'lambda-flow');
  const arn = await arnOf(q.queueUrl);
  const server = await startStandalone();
  const redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
  try {
    const store = new MemoryStore();
    const door = receiver({ store, inbox: sqsInbox({ client, queueUrl: q.queueUrl }) });
    const consumer = receiver({ store });
    for (const id of ['evt_r1', 'evt_r2', 'evt_r3'])
      expect((await deliverTo(door.webhooks, createTestEvent('user.created', { id }))).status).toBe(200);
    const flowControl = new RedisFlowControl({ client: redis, prefix: `${uniqueName('lambda-flow')}:` });
    // Two warm instances of one function: each its own runner, the rate theirs together.
    const instance = () =>
      sqsHandler(consumer.webhooks, {
        client,
        attempts: 1,
        // A window the three records' grants cannot outlast, even on a machine that lags.
        rate: { max: 2, perMs: 4_000 },
        holdMs: 0,
        flowControl,
      });
    const [first, second] = [instance(), instance()];
    const records = (await receiveAll(client, q.queueUrl, { visibility: 10 })).map((message) =>
      recordOf(message, arn),
    );
    expect(records).toHaveLength(3);
    const answers = await Promise.all([
      first({ Records: records.slice(0, 2) }),
      second({ Records: records.slice(2) }),
    ]);
    expect(consumer.runs).toHaveLength(2);
    const listed = answers.flatMap((answer) => answer.batchItemFailures.map((item) => item.itemIdentifier));
    const ran = new Set(consumer.runs.map((run) => run.eventId));
    const held = records.filter((record) => !ran.has(JSON.parse(record.body).event.id));
    expect(listed).toEqual(held.map((record) => record.messageId));
    // The mapping deletes what was not listed; the held record is hidden until the window frees a slot.
    for (const record of records.filter((record) => record !== held[0]))
      await client.send(
        new DeleteMessageCommand({ QueueUrl: q.queueUrl, ReceiptHandle: record.receiptHandle }),
      );
    expect(await receiveAll(client, q.queueUrl, { visibility: 0 })).toEqual([]);

    const again: Message[] = [];
    await waitUntil(
      'the held record to come back',
      async () => {
        again.push(...(await receiveAll(client, q.queueUrl, { visibility: 10 })));
        return again.length > 0;
      },
      15_000,
    );
    expect(again).toHaveLength(1);
    const answer = await first({ Records: again.map((message) => recordOf(message, arn)) });
    expect(answer.batchItemFailures).toEqual([]);
    // Waiting spent no attempt.
    expect(consumer.runs.at(-1)).toEqual({ eventId: JSON.parse(held[0]!.body).event.id, attempt: 1 });
    expect(consumer.errors).toEqual([]);
  } finally {
    redis.disconnect();
    await server.stop();
    await q.delete();
  }
});

test('flow control: rate or concurrencyPerKey without flowControl fails at the start, as the worker does (SQS keeps no shared state)', () => {
  const webhooks = createWebhooks({ secret: SECRET, store: new MemoryStore() });
  expect(() => sqsHandler(webhooks, { client, rate: { max: 6, perMs: 1_000 } })).toThrow(/flowControl/);
  expect(() =>
    sqsHandler(webhooks, { client, concurrencyPerKey: { key: (entry) => entry.event.type, max: 2 } }),
  ).toThrow(/flowControl/);
});

test('a record deferred by a 429 after ten receives is written afresh and left out of the answer, so the queue never redrives a waiting event; the copy runs at attempt 1', async () => {
  const q = await createQueues(client, 'lambda-recopy');
  const arn = await arnOf(q.queueUrl);
  const store = new MemoryStore();
  const door = receiver({ store, inbox: sqsInbox({ client, queueUrl: q.queueUrl }) });
  let limited = 0;
  const consumer = receiver({
    store,
    behaviour: () => {
      if (limited++ < 2) throw new RateLimitedError(1_000);
    },
  });
  await deliverTo(door.webhooks, createTestEvent('user.created', { id: 'evt_l_recopy' }));
  const handler = sqsHandler(consumer.webhooks, { client, attempts: 3, backoff: [1_000] });
  const [message] = await receiveAll(client, q.queueUrl, { visibility: 10 });
  // Nine receives: hidden and listed, as any deferral.
  const ninth = recordOf(message!, arn);
  ninth.attributes.ApproximateReceiveCount = '9';
  expect((await handler({ Records: [ninth] })).batchItemFailures).toEqual([
    { itemIdentifier: ninth.messageId },
  ]);
  // The tenth: a fresh copy is written, and the original left out for the mapping to delete.
  let again: Message[] = [];
  await waitUntil(
    'the hidden record to come back',
    async () => {
      again = await receiveAll(client, q.queueUrl, { visibility: 10 });
      return again.length > 0;
    },
    10_000,
  );
  expect(again.map((found) => found.MessageId)).toEqual([ninth.messageId]);
  const tenth = recordOf(again[0]!, arn);
  tenth.attributes.ApproximateReceiveCount = '10';
  expect((await handler({ Records: [tenth] })).batchItemFailures).toEqual([]);
  await client.send(new DeleteMessageCommand({ QueueUrl: q.queueUrl, ReceiptHandle: tenth.receiptHandle }));
  const copies: Message[] = [];
  await waitUntil(
    'the copy to be due',
    async () => {
      copies.push(...(await receiveAll(client, q.queueUrl, { visibility: 10 })));
      return copies.length > 0;
    },
    10_000,
  );
  expect(copies).toHaveLength(1);
  const copy = copies[0]!;
  expect(copy.MessageId).not.toBe(ninth.messageId);
  expect(JSON.parse(copy.Body!).event.id).toBe('evt_l_recopy');
  expect(copy.Attributes?.ApproximateReceiveCount).toBe('1');
  expect((await invokeWith(handler, [copy], arn, q.queueUrl)).batchItemFailures).toEqual([]);
  expect(consumer.runs.map((run) => run.attempt)).toEqual([1, 1, 1]);
  expect(consumer.errors.map((error) => error.code)).not.toContain('event_dead_lettered');
  expect(await receiveAll(client, q.queueUrl, { visibility: 0 })).toEqual([]);
  await q.delete();
});

/** The mapping's part for messages already received: invoke, then delete what the answer does not list. */
async function invokeWith(
  handler: ReturnType<typeof sqsHandler>,
  messages: Message[],
  arn: string,
  queueUrl: string,
) {
  const event: SQSEvent = { Records: messages.map((message) => recordOf(message, arn)) };
  const answer = await handler(event);
  const failed = new Set(answer.batchItemFailures.map((failure) => failure.itemIdentifier));
  for (const record of event.Records)
    if (!failed.has(record.messageId))
      await client.send(
        new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: record.receiptHandle }),
      );
  return answer;
}
