/**
 * startSqsWorker against fauxqs: events handled once, retries on the receiver's schedule with
 * ctx.attempt 1, 2, 3, dead letters with their cause, poison at once, a deferral that spends no
 * attempt, a crash that spends none either, and a graceful close that waits for a running handler.
 */
import { CreateQueueCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { MemoryStore } from 'service-webhooks';
import {
  ATTRIBUTE,
  type FailureRecord,
  type SqsWorker,
  sqsInbox,
  startSqsWorker,
} from 'service-webhooks/sqs';
import { createTestEvent } from 'service-webhooks/testing';
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import { sealed } from '../support/sealed-entry.js';
import { waitUntil } from '../support/wait-until.js';
import {
  createQueues,
  deliverTo,
  type Fauxqs,
  type Queues,
  receiveAll,
  receiver,
  SECRET,
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

function worker(
  webhooks: Parameters<typeof startSqsWorker>[0],
  queueUrl: string,
  options: Partial<Parameters<typeof startSqsWorker>[1]> = {},
): SqsWorker {
  const started = startSqsWorker(webhooks, {
    client,
    queueUrl,
    attempts: 3,
    backoff: [1_000],
    waitTimeSeconds: 1,
    visibilityTimeoutSeconds: 4,
    monitor: false,
    ...options,
  });
  cleanup.push(() => started.close(true));
  return started;
}

function eventIdOf(body: string): string | undefined {
  try {
    return JSON.parse(body)?.event?.id;
  } catch {
    return undefined;
  }
}

async function deadLetters(url: string) {
  return (await receiveAll(client, url, { visibility: 0 })).map((message) => ({
    eventId: eventIdOf(message.Body!),
    body: message.Body,
    failure: JSON.parse(message.MessageAttributes![ATTRIBUTE.failure]!.StringValue!) as FailureRecord,
  }));
}

test('every event is handled once and leaves the queue', async () => {
  const q = await queues('handled');
  const store = new MemoryStore();
  const door = receiver({ store, inbox: sqsInbox({ client, queueUrl: q.queueUrl }) });
  const consumer = receiver({ store });
  const events = Array.from({ length: 40 }, (_, n) =>
    createTestEvent('user.created', { id: `evt_once_${n}` }),
  );
  for (const event of events) expect((await deliverTo(door.webhooks, event)).status).toBe(200);
  const running = worker(consumer.webhooks, q.queueUrl, { concurrency: 8 });
  await running.waitUntilReady();
  await waitUntil('every event handled', () => consumer.runs.length >= events.length, 20_000);
  await running.close();
  expect(consumer.runs.map((run) => run.eventId).sort()).toEqual(events.map((event) => event.id).sort());
  expect(consumer.runs.every((run) => run.attempt === 1)).toBe(true);
  const stats = await running.stats();
  expect(stats).toMatchObject({
    waiting: 0,
    active: 0,
    delayed: 0,
    deadLettered: 0,
    oldestWaitingMs: undefined,
  });
});

test('retries follow the schedule, with ctx.attempt 1, 2, 3', async () => {
  const q = await queues('retries');
  const store = new MemoryStore();
  const door = receiver({ store, inbox: sqsInbox({ client, queueUrl: q.queueUrl }) });
  const times: number[] = [];
  const consumer = receiver({
    store,
    behaviour: (_event, attempt) => {
      times.push(Date.now());
      if (attempt < 3) throw new Error(`boom ${attempt}`);
    },
  });
  await deliverTo(door.webhooks, createTestEvent('user.created', { id: 'evt_retry' }));
  const running = worker(consumer.webhooks, q.queueUrl, { backoff: [1_000, 2_000] });
  await waitUntil('the third attempt', () => consumer.runs.length >= 3, 20_000);
  await running.close();
  expect(consumer.runs.map((run) => run.attempt)).toEqual([1, 2, 3]);
  // SQS delays in whole seconds: at least the schedule's delay between attempts.
  expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(900);
  expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(1_900);
  expect(await deadLetters(q.deadLetterQueueUrl)).toEqual([]);
  expect(await receiveAll(client, q.queueUrl)).toEqual([]);
});

test('the last failure goes to the dead-letter queue with its cause, and EventDeadLetteredError to onError', async () => {
  const q = await queues('last');
  const store = new MemoryStore();
  const door = receiver({ store, inbox: sqsInbox({ client, queueUrl: q.queueUrl }) });
  const consumer = receiver({
    store,
    behaviour: () => {
      throw new Error('ledger down');
    },
  });
  await deliverTo(door.webhooks, createTestEvent('user.created', { id: 'evt_dead' }));
  const running = worker(consumer.webhooks, q.queueUrl);
  await waitUntil(
    'a dead letter',
    () => consumer.errors.some((error) => error.code === 'event_dead_lettered'),
    20_000,
  );
  await running.close();
  expect(consumer.runs.map((run) => run.attempt)).toEqual([1, 2, 3]);
  const [letter, ...more] = await deadLetters(q.deadLetterQueueUrl);
  expect(more).toEqual([]);
  expect(letter!.eventId).toBe('evt_dead');
  expect(letter!.failure).toMatchObject({ reason: 'last-attempt', attempts: 3 });
  expect(letter!.failure.lastError).toContain('ledger down');
  expect(letter!.failure.failedAt).toBeGreaterThan(0);
  const dead = consumer.errors.find((error) => error.code === 'event_dead_lettered') as { attempts?: number };
  expect(dead.attempts).toBe(3);
  expect(await receiveAll(client, q.queueUrl)).toEqual([]);
});

test('a poison message is dead-lettered at once, as it was written', async () => {
  const q = await queues('poison');
  const consumer = receiver();
  await client.send(new SendMessageCommand({ QueueUrl: q.queueUrl, MessageBody: 'not json at all' }));
  await client.send(
    new SendMessageCommand({ QueueUrl: q.queueUrl, MessageBody: JSON.stringify({ event: { id: 'x' } }) }),
  );
  const running = worker(consumer.webhooks, q.queueUrl);
  await waitUntil(
    'two dead letters',
    () => consumer.errors.filter((error) => error.code === 'event_dead_lettered').length >= 2,
    20_000,
  );
  await running.close();
  expect(consumer.runs).toEqual([]);
  const letters = await deadLetters(q.deadLetterQueueUrl);
  expect(letters.map((letter) => letter.failure.reason)).toEqual(['poison', 'poison']);
  expect(letters.map((letter) => letter.failure.attempts)).toEqual([1, 1]);
  expect(letters.map((letter) => letter.body).sort()).toEqual(
    [JSON.stringify({ event: { id: 'x' } }), 'not json at all'].sort(),
  );
});

test('an event whose claim is held elsewhere is deferred past the lease, spending no attempt', async () => {
  const q = await queues('defer');
  const store = new MemoryStore();
  const options = { receiver: { leaseSeconds: 3, handlerTimeoutMs: 2_000 } };
  const door = receiver({ store, inbox: sqsInbox({ client, queueUrl: q.queueUrl }), ...options });
  // Another run holds the claim for a while, then fails (its claim is released).
  let holderStarted = false;
  const holder = receiver({
    store,
    ...options,
    behaviour: async () => {
      holderStarted = true;
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      throw new Error('holder failed');
    },
  });
  const consumer = receiver({ store, ...options });
  const event = createTestEvent('user.created', { id: 'evt_defer' });
  await deliverTo(door.webhooks, event);
  const holding = holder.webhooks
    .process(await sealed({ event, receivedAt: Date.now(), secretIndex: 0 }, SECRET), { attempt: 1 })
    .catch(() => undefined);
  await waitUntil('the holder to run', () => holderStarted, 5_000);
  const running = worker(consumer.webhooks, q.queueUrl, { attempts: 1 });
  await holding;
  await waitUntil('the deferred event to run', () => consumer.runs.length >= 1, 20_000);
  await running.close();
  // attempts: 1, so a deferral counted as an attempt would have dead-lettered it instead.
  expect(consumer.runs).toEqual([{ eventId: 'evt_defer', attempt: 1 }]);
  expect(await deadLetters(q.deadLetterQueueUrl)).toEqual([]);
});

test('a crashed worker spends no attempt: the message comes back after its visibility with ctx.attempt 1', async () => {
  const q = await queues('crash');
  const store = new MemoryStore();
  const door = receiver({
    store,
    inbox: sqsInbox({ client, queueUrl: q.queueUrl }),
    receiver: { leaseSeconds: 3, handlerTimeoutMs: 2_000 },
  });
  let first = true;
  const crashed = receiver({
    store: new MemoryStore(), // the dead worker is cut off from the shared store
    behaviour: async () => {
      if (first) {
        first = false;
        await new Promise((resolve) => setTimeout(resolve, 10_000));
      }
    },
  });
  await deliverTo(door.webhooks, createTestEvent('user.created', { id: 'evt_crash' }));
  const dying = worker(crashed.webhooks, q.queueUrl, { visibilityTimeoutSeconds: 2 });
  await waitUntil('the first run', () => crashed.runs.length === 1, 10_000);
  await dying.close(true);
  const consumer = receiver({ store, receiver: { leaseSeconds: 3, handlerTimeoutMs: 2_000 } });
  const running = worker(consumer.webhooks, q.queueUrl, { visibilityTimeoutSeconds: 2 });
  await waitUntil('the run after the crash', () => consumer.runs.length >= 1, 20_000);
  await running.close();
  expect(consumer.runs).toEqual([{ eventId: 'evt_crash', attempt: 1 }]);
});

test('close() waits for a running handler and settles its message', async () => {
  const q = await queues('close');
  const store = new MemoryStore();
  const door = receiver({ store, inbox: sqsInbox({ client, queueUrl: q.queueUrl }) });
  let finished = false;
  const consumer = receiver({
    store,
    behaviour: async () => {
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      finished = true;
    },
  });
  await deliverTo(door.webhooks, createTestEvent('user.created', { id: 'evt_close' }));
  const running = worker(consumer.webhooks, q.queueUrl, { visibilityTimeoutSeconds: 2 });
  await waitUntil('the handler to start', () => consumer.runs.length === 1, 10_000);
  expect(running.running).toBe(1);
  await running.close();
  expect(finished).toBe(true);
  expect(running.running).toBe(0);
  // Settled: deleted, so nothing comes back after its visibility.
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  expect(await receiveAll(client, q.queueUrl)).toEqual([]);
});

test('options are checked at construction', () => {
  const webhooks = receiver().webhooks;
  const base = { client, queueUrl: 'http://127.0.0.1/000/q' };
  expect(() => startSqsWorker(webhooks, { ...base, concurrency: 0 })).toThrow(/concurrency/);
  expect(() => startSqsWorker(webhooks, { ...base, waitTimeSeconds: 21 })).toThrow(/waitTimeSeconds/);
  expect(() => startSqsWorker(webhooks, { ...base, visibilityTimeoutSeconds: 50_000 })).toThrow(
    /visibilityTimeoutSeconds/,
  );
  expect(() => startSqsWorker(webhooks, { ...base, queueUrl: 'q' })).toThrow(/queueUrl/);
  expect(() => startSqsWorker({} as never, base)).toThrow(/createWebhooks/);
});

test('a FIFO queue: retries without per-message delays (the copy is hidden until its time), then a FIFO dead letter', async () => {
  const q = await createQueues(client, 'fifo-retries', { fifo: true });
  cleanup.push(() => q.delete());
  const store = new MemoryStore();
  const door = receiver({ store, inbox: sqsInbox({ client, queueUrl: q.queueUrl }) });
  const times: number[] = [];
  const consumer = receiver({
    store,
    behaviour: (event, attempt) => {
      times.push(Date.now());
      if (event.id === 'evt_fifo_dead' || attempt < 2) throw new Error(`fifo boom ${attempt}`);
    },
  });
  await deliverTo(door.webhooks, createTestEvent('user.created', { id: 'evt_fifo_retry' }));
  const running = worker(consumer.webhooks, q.queueUrl, { attempts: 2, backoff: [2_000] });
  await waitUntil('the second attempt', () => consumer.runs.length >= 2, 20_000);
  expect(consumer.runs).toEqual([
    { eventId: 'evt_fifo_retry', attempt: 1 },
    { eventId: 'evt_fifo_retry', attempt: 2 },
  ]);
  expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(1_900);
  await deliverTo(door.webhooks, createTestEvent('user.created', { id: 'evt_fifo_dead' }));
  await waitUntil(
    'a dead letter',
    () => consumer.errors.some((error) => error.code === 'event_dead_lettered'),
    20_000,
  );
  await running.close();
  const letters = await deadLetters(q.deadLetterQueueUrl);
  expect(letters.map((letter) => [letter.eventId, letter.failure.attempts])).toEqual([['evt_fifo_dead', 2]]);
});

test('the door’s traceparent travels as an attribute and reaches the run', async () => {
  const q = await queues('trace');
  const inbox = sqsInbox({ client, queueUrl: q.queueUrl });
  const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  const event = createTestEvent('user.created', { id: 'evt_trace' });
  await inbox.enqueue(
    await sealed({ event, receivedAt: Date.now(), secretIndex: 0, traceparent }, SECRET),
    'evt_trace',
  );
  const [message] = await receiveAll(client, q.queueUrl, { visibility: 0 });
  expect(message!.MessageAttributes?.[ATTRIBUTE.traceparent]?.StringValue).toBe(traceparent);
  expect(JSON.parse(message!.Body!)).not.toHaveProperty('traceparent');
  const seen: (string | undefined)[] = [];
  const consumer = receiver();
  const original = consumer.webhooks.process.bind(consumer.webhooks);
  const observed = new Proxy(consumer.webhooks, {
    get(target, property) {
      if (property === 'process') {
        return (entry: Parameters<typeof original>[0], options: Parameters<typeof original>[1]) => {
          seen.push(entry.traceparent);
          return original(entry, options);
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const running = worker(observed, q.queueUrl);
  await waitUntil('the run', () => consumer.runs.length === 1, 10_000);
  await running.close();
  expect(seen).toEqual([traceparent]);
});

test('a worker with no dead-letter queue (no option, no RedrivePolicy) does not start', async () => {
  const { QueueUrl } = await client.send(
    new CreateQueueCommand({ QueueName: `no-dlq-${crypto.randomUUID().slice(0, 8)}` }),
  );
  const running = worker(receiver().webhooks, QueueUrl!);
  await expect(running.waitUntilReady()).rejects.toThrow(/needs a dead-letter queue/);
  await running.close();
});
