/**
 * The door: an event is answered 200 only once SQS accepted its message; FIFO deduplication ids and
 * groups; the size limit, checked against SQS's documented values; an unreachable SQS answers 503.
 */
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { PayloadTooLargeError } from 'service-webhooks';
import {
  ATTRIBUTE,
  DEFAULT_MAX_MESSAGE_BYTES,
  deduplicationId,
  messageBytes,
  messageOf,
  SQS_MAX_MESSAGE_BYTES,
  SqsMessageTooLargeError,
  sqsInbox,
  WORKER_HEADROOM_BYTES,
} from 'service-webhooks/sqs';
import { createTestEvent } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  createQueues,
  deliverTo,
  type Fauxqs,
  receiveAll,
  receiver,
  sqsClient,
  startSqs,
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

test('answers 200 only once SendMessage has resolved, and the message holds the entry', async () => {
  const queues = await createQueues(client, 'door');
  // A real client whose SendMessage requests wait at a gate before they are sent.
  const gated = sqs.client();
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  let sending = false;
  gated.middlewareStack.add(
    (next) => async (args) => {
      sending = true;
      await gate;
      return next(args);
    },
    { step: 'finalizeRequest', name: 'testGate' },
  );
  const { webhooks } = receiver({
    inbox: sqsInbox({ client: gated, queueUrl: queues.queueUrl, maxMessageBytes: SQS_MAX_MESSAGE_BYTES }),
  });
  const event = createTestEvent('user.created', { id: 'evt_door_gate' });
  let answered = false;
  const answer = deliverTo(webhooks, event).then((response) => {
    answered = true;
    return response;
  });
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(sending).toBe(true);
  expect(answered).toBe(false);
  expect(await receiveAll(client, queues.queueUrl)).toEqual([]);
  open();
  expect((await answer).status).toBe(200);
  const [message, ...more] = await receiveAll(client, queues.queueUrl);
  expect(more).toEqual([]);
  expect(JSON.parse(message!.Body!).event).toEqual(event);
  expect(message!.MessageAttributes?.[ATTRIBUTE.attempt]?.StringValue).toBe('1');
  gated.destroy();
  await queues.delete();
});

describe('FIFO queues', () => {
  test('the deduplication id is the key’s digest (≤ 128 characters, stable): a second write adds nothing', async () => {
    const queues = await createQueues(client, 'door-fifo', { fifo: true });
    const inbox = sqsInbox({ client, queueUrl: queues.queueUrl });
    expect(inbox.fifo).toBe(true);
    const event = createTestEvent('user.created', { id: 'evt_fifo' });
    const key = `scope:${'k'.repeat(394)}`; // a dedup key at its 400-character maximum
    const entry = { event, receivedAt: Date.now(), secretIndex: 0 };
    await inbox.enqueue(entry, key);
    await inbox.enqueue(entry, key);
    const messages = await receiveAll(client, queues.queueUrl);
    expect(messages).toHaveLength(1);
    const dedup = messages[0]!.Attributes?.MessageDeduplicationId;
    expect(dedup).toBe(deduplicationId(key));
    expect(dedup!.length).toBeLessThanOrEqual(128);
    expect(deduplicationId(key)).toBe(deduplicationId(key));
    expect(deduplicationId(key)).not.toBe(deduplicationId(`${key}x`));
    // A retry's copy must not be taken for the door's write.
    expect(deduplicationId(key, 2)).not.toBe(deduplicationId(key));
    // One group per event by default, so events run in parallel.
    expect(messages[0]!.Attributes?.MessageGroupId).toBe(dedup);
    await queues.delete();
  });

  test('messageGroupId: a string, or a function of the entry', async () => {
    const queues = await createQueues(client, 'door-group', { fifo: true });
    const fixed = sqsInbox({ client, queueUrl: queues.queueUrl, messageGroupId: 'billing' });
    const byType = sqsInbox({
      client,
      queueUrl: queues.queueUrl,
      messageGroupId: (entry) => entry.event.type,
    });
    const entry = (id: string) => ({
      event: createTestEvent('user.created', { id }),
      receivedAt: Date.now(),
      secretIndex: 0,
    });
    await fixed.enqueue(entry('evt_g1'), 'k1');
    await byType.enqueue(entry('evt_g2'), 'k2');
    const groups = new Map<string, string>();
    // A FIFO group hands out one message at a time: receive and delete-free read with short visibility.
    for (let round = 0; round < 5 && groups.size < 2; round++) {
      for (const message of await receiveAll(client, queues.queueUrl, { visibility: 30 })) {
        groups.set(JSON.parse(message.Body!).event.id, message.Attributes!.MessageGroupId!);
      }
    }
    expect(Object.fromEntries(groups)).toEqual({ evt_g1: 'billing', evt_g2: 'user.created' });
    expect(() => sqsInbox({ client, queueUrl: queues.queueUrl, messageGroupId: 'x'.repeat(129) })).toThrow(
      /messageGroupId/,
    );
    await queues.delete();
  });
});

describe('size', () => {
  test('the limits the library relies on are SQS’s documented ones', () => {
    // SQS: MaximumMessageSize from 1,024 bytes to 1 MiB; 256 KiB the default of queues made before 2025.
    expect(DEFAULT_MAX_MESSAGE_BYTES).toBe(256 * 1024);
    expect(SQS_MAX_MESSAGE_BYTES).toBe(1024 * 1024);
    // SQS counts the body's UTF-8 bytes plus each attribute's name, data type and value.
    const message = messageOf(
      {
        event: createTestEvent('user.created', { id: 'evt_ü' }),
        receivedAt: 1,
        secretIndex: 0,
        traceparent: 'tp',
      },
      { attempt: 3, enqueuedAt: 42 },
    );
    const expected =
      Buffer.byteLength(message.body, 'utf8') +
      'sw-attempt'.length +
      'Number'.length +
      '3'.length +
      'sw-enqueued-at'.length +
      'Number'.length +
      '42'.length +
      'sw-traceparent'.length +
      'String'.length +
      'tp'.length;
    expect(messageBytes(message)).toBe(expected);
    expect(() => sqsInbox({ client, queueUrl: 'http://x/q', maxMessageBytes: 2 * 1024 * 1024 })).toThrow(
      /1,024 to 1048576/,
    );
  });

  test('the emulator takes a message of exactly MaximumMessageSize as counted, and refuses one byte more', async () => {
    const queues = await createQueues(client, 'door-exact', { maxMessageBytes: 2_048 });
    const base = messageOf(
      { event: createTestEvent('user.created'), receivedAt: 1, secretIndex: 0 },
      { attempt: 1, enqueuedAt: 1 },
    );
    const pad = (bytes: number) => ({ ...base, body: base.body + ' '.repeat(bytes - messageBytes(base)) });
    const send = (message: typeof base) =>
      client.send(
        new SendMessageCommand({
          QueueUrl: queues.queueUrl,
          MessageBody: message.body,
          MessageAttributes: message.attributes,
        }),
      );
    expect(messageBytes(pad(2_048))).toBe(2_048);
    await expect(send(pad(2_048))).resolves.toBeDefined();
    await expect(send(pad(2_049))).rejects.toThrow(/shorter than/);
    await queues.delete();
  });

  test('an event too large for the queue is refused at the door (413 payload_too_large, the sizes to onError), never truncated', async () => {
    const queues = await createQueues(client, 'door-size', { maxMessageBytes: 262_144 });
    const { webhooks, errors } = receiver({ inbox: sqsInbox({ client, queueUrl: queues.queueUrl }) });
    const fits = createTestEvent('user.created', { id: 'evt_fits', data: { blob: 'a'.repeat(200_000) } });
    const tooBig = createTestEvent('user.created', {
      id: 'evt_big',
      data: { blob: 'a'.repeat(262_144 - WORKER_HEADROOM_BYTES) },
    });
    expect((await deliverTo(webhooks, fits)).status).toBe(200);
    const answer = await deliverTo(webhooks, tooBig);
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body).error.code).toBe('payload_too_large');
    expect(errors.map((error) => error.code)).toEqual(['payload_too_large']);
    const cause = errors[0] as SqsMessageTooLargeError;
    expect(cause).toBeInstanceOf(SqsMessageTooLargeError);
    expect(cause).toBeInstanceOf(PayloadTooLargeError);
    expect(cause.maxBytes).toBe(262_144);
    expect(cause.bytes).toBeGreaterThan(262_144);
    const messages = await receiveAll(client, queues.queueUrl);
    expect(messages.map((message) => JSON.parse(message.Body!).event.id)).toEqual(['evt_fits']);
    expect(JSON.parse(messages[0]!.Body!).event.data.blob).toHaveLength(200_000);
    await queues.delete();
  });
});

test('SQS unreachable: enqueue rejects and the door answers 503 inbox_unavailable', async () => {
  const down = sqsClient('http://127.0.0.1:9'); // nothing listens on the discard port
  const { webhooks, errors } = receiver({
    inbox: sqsInbox({
      client: down,
      queueUrl: 'http://127.0.0.1:9/000000000000/gone',
      maxMessageBytes: 262_144,
    }),
  });
  const answer = await deliverTo(webhooks, createTestEvent('user.created', { id: 'evt_down' }));
  expect(answer.status).toBe(503);
  expect(errors.map((error) => error.code)).toEqual(['inbox_unavailable']);
  down.destroy();
});
