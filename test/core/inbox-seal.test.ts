/**
 * Issue 45, item 3: the queue is no part of the trust boundary. The door seals every entry it writes
 * (an HMAC over everything a worker reads), and `process` runs handlers only on an entry whose seal
 * holds: whoever can write to the queue, without the key, can make no handler act on an event the
 * service never sent. Engine by engine on real queues: test/inbox, test/pg-boss, test/sqs
 * (`sealed-entries.test.ts`), and the conformance suite's `forged` rule.
 */

import {
  ConfigurationError,
  createWebhooks,
  type HandlerContext,
  type InboxEntry,
  type InboxQueue,
  type WebhookError,
} from 'service-webhooks';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { canonicalJson, InboxSeal } from '../../src/inbox-seal.js';
import { sealed } from '../support/sealed-entry.js';
import { SpyStore } from './spy-store.js';

const secret = 'whsec_inbox_seal';

/** A door's queue that keeps entries as JSON, as a durable queue would. */
class ArrayInbox implements InboxQueue {
  readonly entries: InboxEntry[] = [];
  async enqueue(entry: InboxEntry): Promise<void> {
    this.entries.push(JSON.parse(JSON.stringify(entry)));
  }
}

/** The entry a door with `options` writes for a fresh `payment.succeeded`. */
async function doorEntry(options: { secret?: string | string[]; inboxKey?: string | string[] } = {}) {
  const inbox = new ArrayInbox();
  const door = createWebhooks({ secret: options.secret ?? secret, inbox, ...options });
  const signWith = Array.isArray(options.secret) ? options.secret[0]! : (options.secret ?? secret);
  const answer = await deliver(door, createTestEvent('payment.succeeded'), { secret: signWith });
  expect(answer.status).toBe(200);
  return inbox.entries[0]!;
}

/** A worker receiver that records its handler runs, its reports and its store calls. */
function worker(options: { secret?: string | string[]; inboxKey?: string | string[] } = {}) {
  const store = new SpyStore();
  const runs: { amount: unknown; context: HandlerContext }[] = [];
  const errors: WebhookError[] = [];
  const webhooks = createWebhooks({ secret, store, ...options })
    .onAny((event, context) => {
      runs.push({ amount: (event.data as { amount?: unknown }).amount, context });
    })
    .onError((error) => {
      errors.push(error);
    });
  return { webhooks, store, runs, errors };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the door seals what it writes; a worker runs only what the seal vouches for', () => {
  test('the door writes a seal; the worker runs the entry as written, even with its keys reordered', async () => {
    const entry = await doorEntry();
    expect(entry.seal).toMatch(/^v1\.[0-9a-f]{64}$/);
    const { webhooks, runs } = worker();
    // PostgreSQL's jsonb gives keys back in an order of its own: the seal covers values, not text.
    const reordered = JSON.parse(canonicalJson(entry)) as InboxEntry;
    expect(Object.keys(reordered)).not.toEqual(Object.keys(entry));
    await expect(webhooks.process(reordered)).resolves.toBe('handled');
    expect(runs).toHaveLength(1);
  });

  const forgeries: [string, (entry: InboxEntry) => unknown][] = [
    ['no seal', ({ seal: _seal, ...entry }) => entry],
    [
      'an edited amount',
      (entry) => ({ ...entry, event: { ...entry.event, data: { ...entry.event.data, amount: 999999999 } } }),
    ],
    ['an edited receivedAt', (entry) => ({ ...entry, receivedAt: entry.receivedAt - 1 })],
    ['an edited secretIndex', (entry) => ({ ...entry, secretIndex: 1 })],
    [
      'a traceparent added',
      (entry) => ({ ...entry, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00' }),
    ],
    ['a seal in upper case', (entry) => ({ ...entry, seal: entry.seal!.toUpperCase().replace('V1', 'v1') })],
    ['a seal that is not a string', (entry) => ({ ...entry, seal: 42 })],
    ['an attempt with no seal of its own', (entry) => ({ ...entry, attempt: 999 })],
  ];
  test.each(forgeries)(
    '%s: refused as unauthenticated, reported, no handler run, no store call',
    async (_, forge) => {
      const forged = forge(await doorEntry()) as InboxEntry;
      const { webhooks, store, runs, errors } = worker();
      const refused = await webhooks.process(forged).catch((error: unknown) => error);
      expect((refused as WebhookError).code).toBe('unauthenticated_inbox_entry');
      expect((refused as WebhookError).name).toBe('UnauthenticatedInboxEntryError');
      expect(errors).toEqual([refused]);
      expect(runs).toEqual([]);
      expect(store.calls).toEqual([]);
    },
  );

  test('an entry made up whole with a payment of 999999999 runs nothing', async () => {
    const { webhooks, runs, errors } = worker();
    const event = { ...createTestEvent('payment.succeeded'), data: { amount: 999999999 } };
    const refused = await webhooks
      .process({ event, receivedAt: Date.now(), secretIndex: 0 } as InboxEntry)
      .catch((error: unknown) => error);
    expect((refused as WebhookError).code).toBe('unauthenticated_inbox_entry');
    expect(runs).toEqual([]);
    expect(errors).toHaveLength(1);
  });
});

describe('keys: derived from the secrets, or an inboxKey of their own; rotation', () => {
  test('while rotating ([new, old]) a worker accepts entries the door sealed under either secret', async () => {
    const underOld = await doorEntry({ secret: 'whsec_old' });
    const underNew = await doorEntry({ secret: ['whsec_new', 'whsec_old'] });
    const { webhooks, runs } = worker({ secret: ['whsec_new', 'whsec_old'] });
    await expect(webhooks.process(underOld)).resolves.toBe('handled');
    await expect(webhooks.process(underNew)).resolves.toBe('handled');
    expect(runs).toHaveLength(2);
    // The old secret rotated out: what is still queued under it is refused (hence `inboxKey`).
    const after = worker({ secret: 'whsec_new' });
    const refused = await after.webhooks.process(await doorEntry({ secret: 'whsec_old' })).catch((e) => e);
    expect((refused as WebhookError).code).toBe('unauthenticated_inbox_entry');
  });

  test('an inboxKey outlives a secret rotation, and is rotated itself as a list', async () => {
    const entry = await doorEntry({ secret: 'whsec_old', inboxKey: 'inbox-key-1' });
    const { webhooks, runs } = worker({ secret: 'whsec_new', inboxKey: ['inbox-key-2', 'inbox-key-1'] });
    await expect(webhooks.process(entry)).resolves.toBe('handled');
    expect(runs).toHaveLength(1);
    // A worker without the inboxKey (keys from the secret) refuses it: the two never mix.
    const derived = worker({ secret: 'whsec_old' });
    const refused = await derived.webhooks.process(entry).catch((error: unknown) => error);
    expect((refused as WebhookError).code).toBe('unauthenticated_inbox_entry');
  });

  test('a blank inboxKey is a ConfigurationError', () => {
    for (const inboxKey of ['', '  ', [], ['key', '']] as const)
      expect(() => createWebhooks({ secret, inboxKey: inboxKey as never })).toThrow(ConfigurationError);
  });

  test('a door on Web Crypto (an edge runtime) and a worker on node:crypto agree', async () => {
    const entry = { event: createTestEvent('user.created'), receivedAt: 1_700_000_000_000, secretIndex: 0 };
    const web = new InboxSeal([secret], undefined);
    const node = new InboxSeal([secret]);
    const seal = await web.seal(entry);
    expect(seal).toBe(await node.seal(entry));
    expect(await node.check({ ...entry, seal })).toBe('sealed');
    expect(await web.check({ ...entry, seal, receivedAt: 1 })).toBe('forged');
    expect(await web.sealAttempt(seal, 2)).toBe(await node.sealAttempt(seal, 2));
  });
});

describe('the attempt, where an engine carries it in the message (SQS, pg-boss)', () => {
  test('sealAttempt binds an attempt to the entry: it becomes ctx.attempt; a changed one is refused', async () => {
    const entry = await doorEntry();
    const { webhooks, runs } = worker();
    const third = await webhooks.sealAttempt(entry, 3);
    expect(third.seal).toBe(entry.seal);
    expect(third.attemptSeal).toMatch(/^v1\.[0-9a-f]{64}$/);
    const refused = await webhooks.process({ ...third, attempt: 999 }).catch((error: unknown) => error);
    expect((refused as WebhookError).code).toBe('unauthenticated_inbox_entry');
    // Another entry's attempt seal is no use either: it is bound to the entry's own seal.
    const other = await webhooks.sealAttempt(await doorEntry(), 3);
    const borrowed = await webhooks
      .process({ ...entry, attempt: 3, attemptSeal: other.attemptSeal! })
      .catch((e) => e);
    expect((borrowed as WebhookError).code).toBe('unauthenticated_inbox_entry');
    expect(runs).toEqual([]);
    await expect(webhooks.process(third, { attempt: 1 })).resolves.toBe('handled');
    expect(runs.map((run) => run.context.attempt)).toEqual([3]);
  });

  test('sealAttempt never seals an unsealed entry', async () => {
    const { seal: _seal, ...unsealed } = await doorEntry();
    const { webhooks } = worker();
    const copy = await webhooks.sealAttempt(unsealed, 2);
    expect(copy).toEqual({ ...unsealed, attempt: 2 });
    const refused = await webhooks.process(copy).catch((error: unknown) => error);
    expect((refused as WebhookError).code).toBe('unauthenticated_inbox_entry');
  });
});

describe('entries of a door before seals: acceptUnsealed, during an upgrade', () => {
  test('runs an unsealed entry, warning at most once a minute; never one whose seal does not hold', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const { webhooks, runs } = worker();
    const old = () => ({ event: createTestEvent('user.created'), receivedAt: Date.now(), secretIndex: 0 });
    await expect(webhooks.process(old(), { acceptUnsealed: true })).resolves.toBe('handled');
    await expect(webhooks.process(old(), { acceptUnsealed: true })).resolves.toBe('handled');
    expect(runs).toHaveLength(2);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]![0])).toMatch(/without a seal/);
    const edited = { ...(await doorEntry()), receivedAt: 1 };
    const refused = await webhooks.process(edited, { acceptUnsealed: true }).catch((error: unknown) => error);
    expect((refused as WebhookError).code).toBe('unauthenticated_inbox_entry');
    expect(runs).toHaveLength(2);
  });

  test('a sealed entry made by hand (the test helper) is what the door writes', async () => {
    const entry = { event: createTestEvent('user.created'), receivedAt: Date.now(), secretIndex: 0 };
    const { webhooks, runs } = worker();
    await expect(webhooks.process(await sealed(entry, secret))).resolves.toBe('handled');
    expect(runs).toHaveLength(1);
  });
});
