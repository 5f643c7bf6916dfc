/**
 * The core side of the inbox (issue 23), engine-agnostic: the door verifies, deduplicates and hands
 * the event to any `InboxQueue`, answering 200 only once it holds the event; `process` runs the
 * handlers exactly once per event id in workers. The queue here is a plain array behind the seam's
 * interface, the simplest real engine; BullMQ's is tested in test/inbox against real Redis.
 */

import { getEventListeners } from 'node:events';
import {
  createWebhooks,
  EventInProgressError,
  HandlerFailedError,
  type InboxEntry,
  type InboxQueue,
  InvalidInboxEntryError,
  MemoryStore,
  PayloadTooLargeError,
  STATUS_TABLE,
  type WebhookError,
} from 'service-webhooks';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { describe, expect, test } from 'vitest';
import { sealed } from '../support/sealed-entry.js';
import { sleep } from '../support/sleep.js';
import { SpyStore } from './spy-store.js';

const secret = 'whsec_inbox_seam';

class ArrayInbox implements InboxQueue {
  readonly entries: { entry: InboxEntry; key: string }[] = [];
  fail: Error | undefined;
  hang = false;
  async enqueue(entry: InboxEntry, key: string): Promise<void> {
    if (this.hang) return new Promise(() => {});
    if (this.fail) throw this.fail;
    // Kept as JSON, as a durable queue would: the worker sees what survives serialisation.
    this.entries.push({ entry: JSON.parse(JSON.stringify(entry)), key });
  }
}

describe('the door', () => {
  test('answers 200 once the inbox holds the event, runs no handler, and answers a duplicate as one', async () => {
    const inbox = new ArrayInbox();
    const store = new MemoryStore();
    let ran = 0;
    const door = createWebhooks({ secret, store, inbox }).on('user.created', () => {
      ran++;
    });
    const event = createTestEvent('user.created');
    const first = await deliver(door, event, { secret });
    expect(first.status).toBe(200);
    expect(ran).toBe(0);
    expect(inbox.entries).toHaveLength(1);
    expect(inbox.entries[0]!.entry.event.id).toBe(event.id);
    expect(inbox.entries[0]!.key.endsWith(event.id)).toBe(true);
    expect(Math.abs(inbox.entries[0]!.entry.receivedAt - Date.now())).toBeLessThan(5_000);
    const again = await deliver(door, event, { secret });
    expect(again.status).toBe(200);
    expect(again.headers['x-webhook-duplicate']).toBe('true');
    expect(inbox.entries).toHaveLength(1);
  });

  test('events are queued whether or not the door has handlers for them', async () => {
    const inbox = new ArrayInbox();
    const door = createWebhooks({ secret, inbox });
    expect((await deliver(door, createTestEvent('payment.refunded'), { secret })).status).toBe(200);
    expect(inbox.entries).toHaveLength(1);
  });

  test('an inbox that fails or hangs gets 503 inbox_unavailable, and the next copy is queued', async () => {
    const inbox = new ArrayInbox();
    const errors: WebhookError[] = [];
    const door = createWebhooks({ secret, inbox, storeTimeoutMs: 50 }).onError((error) => {
      errors.push(error);
    });
    const event = createTestEvent('user.created');
    inbox.fail = new Error('READONLY You can not write against a read only replica.');
    const refused = await deliver(door, event, { secret });
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.body).error.code).toBe('inbox_unavailable');
    expect(refused.headers['retry-after']).toBe('60');
    inbox.fail = undefined;
    inbox.hang = true;
    const started = performance.now();
    const hung = await deliver(door, event, { secret });
    expect(hung.status).toBe(503);
    expect(performance.now() - started).toBeLessThan(1_000);
    inbox.hang = false;
    expect((await deliver(door, event, { secret })).status).toBe(200);
    expect(inbox.entries).toHaveLength(1);
    expect(errors.map((error) => error.code)).toEqual(['inbox_unavailable', 'inbox_unavailable']);
  });
  test('an entry the inbox can never hold (it rejects with PayloadTooLargeError) is a 413, its detail to onError only; the claim is released', async () => {
    const inbox = new ArrayInbox();
    const errors: WebhookError[] = [];
    const door = createWebhooks({ secret, inbox }).onError((error) => {
      errors.push(error);
    });
    const event = createTestEvent('user.created');
    inbox.fail = new PayloadTooLargeError('The entry needs 300000 bytes; the queue takes 262144.');
    const refused = await deliver(door, event, { secret });
    expect(refused.status).toBe(413);
    // The sender gets the table's words; the sizes are the operator's, in onError.
    expect(JSON.parse(refused.body).error).toEqual({
      code: 'payload_too_large',
      message: STATUS_TABLE.payload_too_large.message,
    });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBe(inbox.fail);
    // Nothing holds the event: once the queue can take it, the sender's retry is queued.
    inbox.fail = undefined;
    expect((await deliver(door, event, { secret })).status).toBe(200);
    expect(inbox.entries).toHaveLength(1);
  });
});

describe('process, in a worker', () => {
  test('runs the handlers once per event id with the attempt and the time received; a rerun is a duplicate', async () => {
    const inbox = new ArrayInbox();
    const store = new MemoryStore();
    const door = createWebhooks({ secret, store, inbox });
    const seen: { attempt: number; receivedAt: number }[] = [];
    const worker = createWebhooks({ secret, store }).on('user.created', (_event, ctx) => {
      seen.push({ attempt: ctx.attempt, receivedAt: ctx.receivedAt });
    });
    await deliver(door, createTestEvent('user.created'), { secret });
    const { entry } = inbox.entries[0]!;
    await expect(worker.process(entry, { attempt: 2 })).resolves.toBe('handled');
    await expect(worker.process(entry, { attempt: 3 })).resolves.toBe('duplicate');
    expect(seen).toEqual([{ attempt: 2, receivedAt: entry.receivedAt }]);
  });

  test('a failure rejects with HandlerFailedError and releases the claim: the retry runs', async () => {
    const inbox = new ArrayInbox();
    const store = new MemoryStore();
    const door = createWebhooks({ secret, store, inbox });
    let calls = 0;
    const errors: WebhookError[] = [];
    const worker = createWebhooks({ secret, store })
      .on('user.created', () => {
        calls++;
        if (calls === 1) throw new Error('downstream is down');
      })
      .onError((error) => {
        errors.push(error);
      });
    await deliver(door, createTestEvent('user.created'), { secret });
    const { entry } = inbox.entries[0]!;
    await expect(worker.process(entry, { attempt: 1 })).rejects.toBeInstanceOf(HandlerFailedError);
    await expect(worker.process(entry, { attempt: 2 })).resolves.toBe('handled');
    expect(calls).toBe(2);
    expect(errors.map((error) => error.code)).toEqual(['handler_failed']);
  });

  test('two workers on one event at once: one runs, the other is told the event is in progress', async () => {
    const store = new MemoryStore();
    let running = 0;
    const worker = createWebhooks({ secret, store }).on('user.created', async () => {
      running++;
      await sleep(30);
    });
    const entry: InboxEntry = await sealed(
      { event: createTestEvent('user.created'), receivedAt: Date.now(), secretIndex: 0 },
      secret,
    );
    const results = await Promise.allSettled([worker.process(entry), worker.process(entry)]);
    expect(running).toBe(1);
    expect(results.map((result) => result.status).sort()).toEqual(['fulfilled', 'rejected']);
    const rejected = results.find((result) => result.status === 'rejected') as PromiseRejectedResult;
    expect(rejected.reason).toBeInstanceOf(EventInProgressError);
  });

  test('a replay runs the handlers once more, and is itself deduplicated', async () => {
    const store = new MemoryStore();
    let calls = 0;
    const worker = createWebhooks({ secret, store }).on('user.created', () => {
      calls++;
    });
    const entry: InboxEntry = await sealed(
      { event: createTestEvent('user.created'), receivedAt: Date.now(), secretIndex: 0 },
      secret,
    );
    await worker.process(entry);
    await expect(worker.process(entry, { replayId: 'r1' })).resolves.toBe('handled');
    await expect(worker.process(entry, { replayId: 'r1' })).resolves.toBe('duplicate');
    await expect(worker.process(entry, { replayId: 'r2' })).resolves.toBe('handled');
    expect(calls).toBe(3);
  });

  test('the door and the worker keep apart: queuing an event does not make its run a duplicate', async () => {
    const inbox = new ArrayInbox();
    const store = new MemoryStore();
    let calls = 0;
    const door = createWebhooks({ secret, store, inbox, namespace: '' });
    const worker = createWebhooks({ secret, store, namespace: '' }).on('user.created', () => {
      calls++;
    });
    await deliver(door, createTestEvent('user.created'), { secret });
    await expect(worker.process(inbox.entries[0]!.entry)).resolves.toBe('handled');
    expect(calls).toBe(1);
  });

  test('one shutdown signal shared by many runs keeps no listener of a run that ended', async () => {
    const worker = createWebhooks({ secret }).on('user.created', async () => {});
    const shutdown = new AbortController();
    for (let n = 0; n < 20; n++) {
      const entry: InboxEntry = await sealed(
        { event: createTestEvent('user.created'), receivedAt: Date.now(), secretIndex: 0 },
        secret,
      );
      await expect(worker.process(entry, { signal: shutdown.signal })).resolves.toBe('handled');
    }
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0);
  });

  test('the worker signal aborts ctx.signal, and a malformed entry is a TypeError', async () => {
    const worker = createWebhooks({ secret }).on('user.created', async (_event, { signal }) => {
      if (!signal.aborted) await new Promise((resolve) => signal.addEventListener('abort', resolve));
      throw signal.reason;
    });
    const controller = new AbortController();
    const entry: InboxEntry = await sealed(
      { event: createTestEvent('user.created'), receivedAt: Date.now(), secretIndex: 0 },
      secret,
    );
    const run = worker.process(entry, { signal: controller.signal });
    controller.abort(new Error('shutting down'));
    await expect(run).rejects.toBeInstanceOf(HandlerFailedError);
    await expect(worker.process({} as InboxEntry)).rejects.toBeInstanceOf(InvalidInboxEntryError);
    await expect(worker.process(entry, { replayId: '' })).rejects.toBeInstanceOf(TypeError);
  });
});

describe('a poison entry (one no door wrote) is refused for good, reported, and runs nothing', () => {
  const event = () => createTestEvent('payment.succeeded') as unknown as Record<string, unknown>;
  const good = { receivedAt: Date.now(), secretIndex: 0 };
  test.each([
    ['not an object', 'a string', /not an object/],
    ['no event', { ...good }, /no `event`/],
    ['an event that is not an object', { ...good, event: 'evt_1' }, /`event` must be a JSON object/],
    ['an event without an id', { ...good, event: { ...event(), id: undefined } }, /`event.id` must be/],
    [
      'an id too long for a key',
      { ...good, event: { ...event(), id: 'x'.repeat(256) } },
      /`event.id` must be/,
    ],
    ['an event without a type', { ...good, event: { ...event(), type: '' } }, /`event.type`/],
    [
      'a created that is not Unix seconds',
      { ...good, event: { ...event(), created: '2026' } },
      /`event.created`/,
    ],
    ['data that is not an object', { ...good, event: { ...event(), data: [] } }, /`event.data`/],
    ['no livemode', { ...good, event: { ...event(), livemode: 'yes' } }, /`event.livemode`/],
    ['no receivedAt', { event: event(), secretIndex: 0 }, /`receivedAt`/],
    ['a negative secretIndex', { ...good, event: event(), secretIndex: -1 }, /`secretIndex`/],
    ['a fractional secretIndex', { ...good, event: event(), secretIndex: 0.5 }, /`secretIndex`/],
  ])('%s', async (_, entry, reason) => {
    const store = new SpyStore();
    const errors: WebhookError[] = [];
    let ran = 0;
    const worker = createWebhooks({ secret, store })
      .onAny(() => {
        ran++;
      })
      .onError((error) => {
        errors.push(error);
      });
    const refused = await worker.process(entry as unknown as InboxEntry).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(InvalidInboxEntryError);
    expect((refused as InvalidInboxEntryError).code).toBe('invalid_inbox_entry');
    expect((refused as InvalidInboxEntryError).reason).toMatch(reason);
    expect(errors).toEqual([refused]);
    expect(ran).toBe(0);
    expect(store.calls).toEqual([]);
  });

  test('a secretIndex beyond the secrets held now is accepted: a rotation may have dropped that secret since', async () => {
    let ran = 0;
    const worker = createWebhooks({ secret }).onAny(() => {
      ran++;
    });
    const entry = await sealed(
      { event: createTestEvent('user.created'), receivedAt: Date.now(), secretIndex: 1 },
      secret,
    );
    await expect(worker.process(entry)).resolves.toBe('handled');
    expect(ran).toBe(1);
  });
});
