/** sqsInboxAdmin against fauxqs: list, get, replay, replayAll, remove, and a doubled replay. */
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DeadLetterError, MemoryStore } from 'service-webhooks';
import { sqsInbox, sqsInboxAdmin, startSqsWorker } from 'service-webhooks/sqs';
import { createTestEvent } from 'service-webhooks/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { waitUntil } from '../support/wait-until.js';
import { createQueues, deliverTo, type Fauxqs, receiver, startSqs } from './support.js';

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

/** Queues whose dead-letter queue holds `ids`, dead-lettered by a worker whose handler failed. */
async function deadLettered(label: string, ids: readonly string[]) {
  const q = await createQueues(client, label);
  const store = new MemoryStore();
  let failing = true;
  const consumer = receiver({
    store,
    behaviour: () => {
      if (failing) throw new Error('not yet');
    },
  });
  const door = receiver({ store, inbox: sqsInbox({ client, queueUrl: q.queueUrl }) });
  for (const id of ids) await deliverTo(door.webhooks, createTestEvent('user.created', { id }));
  const worker = startSqsWorker(consumer.webhooks, {
    client,
    queueUrl: q.queueUrl,
    attempts: 1,
    waitTimeSeconds: 1,
    monitor: false,
  });
  await waitUntil(
    'the dead letters',
    () => consumer.errors.filter((error) => error.code === 'event_dead_lettered').length >= ids.length,
    20_000,
  );
  failing = false;
  return { q, consumer, worker, admin: sqsInboxAdmin({ client, queueUrl: q.queueUrl }) };
}

test('list, get and remove', async () => {
  const { q, worker, admin } = await deadLettered('admin-list', ['evt_a1', 'evt_a2', 'evt_a3']);
  expect(admin.engine).toBe('sqs');
  const page = await admin.list();
  expect(page.total).toBe(3);
  expect(page.items.map((letter) => letter.eventId).sort()).toEqual(['evt_a1', 'evt_a2', 'evt_a3']);
  const letter = page.items[0]!;
  expect(letter).toMatchObject({ eventType: 'user.created', attempts: 1, replayOf: undefined });
  expect(letter.lastError).toContain('not yet');
  expect(letter.stacktrace[0]).toContain('not yet');
  expect(letter.failedAt).toBeGreaterThanOrEqual(letter.enqueuedAt);
  expect(letter.entry.event.id).toBe(letter.eventId);
  expect((await admin.list({ offset: 1, limit: 1 })).items).toHaveLength(1);
  expect(await admin.get(letter.jobId)).toMatchObject({ jobId: letter.jobId, eventId: letter.eventId });
  expect(await admin.get('no-such-id')).toBeUndefined();
  await admin.remove(letter.jobId);
  expect((await admin.list()).total).toBe(2);
  await expect(admin.remove(letter.jobId)).rejects.toBeInstanceOf(DeadLetterError);
  expect((await admin.stats()).deadLettered).toBe(2);
  await worker.close();
  await q.delete();
});

test('replay runs the handlers once more; replayAll replays every one', async () => {
  const { q, consumer, worker, admin } = await deadLettered('admin-replay', ['evt_r1', 'evt_r2', 'evt_r3']);
  const [first] = (await admin.list()).items;
  const replay = await admin.replay(first!.jobId);
  expect(replay).toMatchObject({ eventId: first!.eventId, replayOf: first!.jobId });
  expect(replay.replayId).toHaveLength(22);
  await waitUntil(
    'the replay',
    () => consumer.runs.filter((run) => run.eventId === first!.eventId).length === 2,
    20_000,
  );
  await expect(admin.replay(first!.jobId)).rejects.toMatchObject({ code: 'not_found' });
  const rest = await admin.replayAll();
  expect(rest.map((r) => r.eventId).sort()).toEqual(
    ['evt_r1', 'evt_r2', 'evt_r3'].filter((id) => id !== first!.eventId).sort(),
  );
  await waitUntil('every replay', () => consumer.runs.length === 6, 20_000);
  expect((await admin.list()).total).toBe(0);
  await worker.close();
  await q.delete();
});

test('replaying one dead letter twice at once runs the handlers once', async () => {
  const { q, consumer, worker, admin } = await deadLettered('admin-twice', ['evt_t1']);
  const other = sqsInboxAdmin({ client, queueUrl: q.queueUrl });
  const [letter] = (await admin.list()).items;
  const results = await Promise.allSettled([
    admin.replay(letter!.jobId),
    admin.replay(letter!.jobId),
    other.replay(letter!.jobId),
  ]);
  const made = results.filter((result) => result.status === 'fulfilled');
  expect(made.length).toBeGreaterThanOrEqual(1);
  for (const result of results) {
    if (result.status === 'rejected') expect(result.reason).toBeInstanceOf(DeadLetterError);
  }
  await waitUntil('the replay', () => consumer.runs.length === 2, 20_000);
  // Time for a second replay to run, if one had been written.
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  expect(consumer.runs.map((run) => run.eventId)).toEqual(['evt_t1', 'evt_t1']);
  await worker.close();
  await q.delete();
});
