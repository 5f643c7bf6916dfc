/**
 * JetStream's MaxDeliver on the inbox's consumer, against the machine's NATS (127.0.0.1:4222): an
 * event every worker that ran it stopped on (a crash, out of memory; here a forced close mid-handler)
 * is delivered `maxDeliveries` times and never acknowledged, and JetStream stops handing it out with
 * an advisory. A running worker hears it and moves the event to the dead letters as `crashed`,
 * reporting `EventDeadLetteredError`: reported, and replayable, not left unseen in the stream.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { createWebhooks, EventDeadLetteredError, MemoryStore, type WebhookError } from 'service-webhooks';
import {
  type NatsWorker,
  natsInbox,
  natsInboxAdmin,
  natsInboxNames,
  startNatsWorker,
} from 'service-webhooks/nats';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { waitUntil } from '../support/wait-until.js';
import { connectNats, deleteInbox, SECRET, uniqueStream } from './support.js';

let connection: NatsConnection;
const stream = uniqueStream('max-deliveries');

beforeAll(async () => {
  connection = await connectNats();
});

afterAll(async () => {
  await deleteInbox(connection, stream);
  await connection?.close();
});

test('an event delivered MaxDeliver times and never acknowledged reaches the dead letters as crashed, and onError hears it', async () => {
  const event = createTestEvent('payment.succeeded');
  const door = createWebhooks({
    secret: SECRET,
    store: new MemoryStore(),
    inbox: natsInbox({ connection, stream }),
  });
  expect((await deliver(door, event, { secret: SECRET })).status).toBe(200);

  // Handlers that never end, in workers that are then stopped as if they crashed. Each worker has a
  // store of its own, so that the second delivery runs rather than finds the first run's claim.
  let runs = 0;
  let letGo: () => void = () => {};
  const never = new Promise<void>((resolve) => {
    letGo = resolve;
  });
  const errors: WebhookError[] = [];
  const worker = async (handler: () => Promise<void> | void): Promise<NatsWorker> => {
    const webhooks = createWebhooks({ secret: SECRET, store: new MemoryStore() });
    webhooks.on('payment.succeeded', handler);
    webhooks.onError((error) => {
      errors.push(error);
    });
    return startNatsWorker(webhooks, {
      connection,
      stream,
      ackWaitMs: 3_000,
      maxDeliveries: 2,
      pollMs: 1_000,
      monitor: false,
    });
  };
  const hangs = () => {
    runs++;
    return never;
  };
  const admin = natsInboxAdmin({ connection, stream });
  try {
    const first = await worker(hangs);
    await waitUntil('the first delivery to run', () => runs >= 1, 10_000);
    await first.close(true);
    // Handed out again once its AckWait ended: the second and last delivery.
    const second = await worker(hangs);
    await waitUntil('the second delivery to run', () => runs >= 2, 15_000);
    // A worker that would handle the event, started while the second delivery holds it: it never gets
    // it (JetStream hands out no third delivery), only the advisory once the second's AckWait ends.
    let handled = 0;
    const listener = await worker(() => {
      handled++;
    });
    await second.close(true);
    try {
      // The report comes last: the worker stores the letter, deletes the original, then says so.
      const reported = () => errors.filter((error) => error instanceof EventDeadLetteredError);
      await waitUntil(
        'the event in the dead letters, reported',
        async () => reported().length === 1 && (await admin.stats()).deadLettered === 1,
        15_000,
      );
      const page = await admin.list();
      expect(page.items).toHaveLength(1);
      const [letter] = page.items;
      expect(letter!.eventId).toBe(event.id);
      expect(letter!.entry.event).toEqual(event);
      expect(letter!.lastError).toMatch(/^abandoned: delivered 2 times and never acknowledged/);
      const jsm = await jetstreamManager(connection);
      const stored = await jsm.streams.getMessage(natsInboxNames(stream).deadLetterStream, {
        seq: Number(letter!.jobId),
      });
      expect(JSON.parse(stored!.header.get('Sw-Failure'))).toMatchObject({ reason: 'crashed' });
      // Moved, not copied: the inbox's stream no longer holds it, and no worker ran it a third time.
      expect((await admin.stats()).depth).toBe(0);
      expect([runs, handled]).toEqual([2, 0]);
      expect(reported()).toHaveLength(1);
      expect(reported()[0]!.message).toContain(event.id);
      expect((reported()[0]!.cause as Error).message).toMatch(/JetStream's MaxDeliver/);
    } finally {
      await listener.close();
    }
  } finally {
    letGo();
    await admin.close();
  }
});
