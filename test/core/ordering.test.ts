/**
 * The `ordering` option's guarded path on the MemoryStore: `serialize` never lets two handlers of one
 * resource overlap, `latest` never runs a stale event, the tie rule, a deletion stays final, events
 * without a resource run unguarded (and say so), and a store without the operations fails at
 * construction. The same rules against every real store are the conformance suite's and the
 * multi-process property test's.
 */
import {
  ConfigurationError,
  createWebhooks,
  type DeliveryRecord,
  type IdempotencyStore,
  MemoryStore,
  orderingPosition,
  type StaleEvent,
  type WebhookLogger,
} from 'service-webhooks';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { describe, expect, test } from 'vitest';

const secret = 'whsec_ordering_unit';
const NOW = Math.floor(Date.now() / 1000);

function recordingLogger(): WebhookLogger & { records: DeliveryRecord[] } {
  const records: DeliveryRecord[] = [];
  const keep = (record: DeliveryRecord) => {
    records.push(record);
  };
  return { records, info: keep, warn: keep, error: keep };
}

function userEvent(type: 'user.created' | 'user.updated' | 'user.deleted', created: number, name: string) {
  return createTestEvent(type, { created, data: { object: 'user', id: 'usr_1', name } as never });
}

describe('serialize', () => {
  test('a second event of a busy resource is answered 409 resource_busy with Retry-After, and runs on its retry', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const ran: string[] = [];
    const webhooks = createWebhooks({ secret, ordering: { 'user.*': 'serialize' } }).on(
      'user.updated',
      async (event) => {
        ran.push(event.id);
        if (ran.length === 1) await gate;
      },
    );
    const first = userEvent('user.updated', NOW, 'a');
    const second = userEvent('user.updated', NOW + 1, 'b');
    const pending = deliver(webhooks, first, { secret });
    await new Promise((resolve) => setTimeout(resolve, 10));
    const busy = await deliver(webhooks, second, { secret });
    expect(busy.status).toBe(409);
    expect(JSON.parse(busy.body).error.code).toBe('resource_busy');
    expect(Number(busy.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    release();
    expect((await pending).status).toBe(200);
    // The busy answer gave the event back: its retry runs it.
    expect((await deliver(webhooks, second, { secret })).status).toBe(200);
    expect(ran).toEqual([first.id, second.id]);
  });

  test('many concurrent events of one resource never overlap, and every one runs once (serialize drops nothing)', async () => {
    let running = 0;
    let overlaps = 0;
    const ran = new Set<string>();
    const webhooks = createWebhooks({ secret, ordering: { 'payment.*': 'serialize' } }).on(
      'payment.succeeded',
      async (event) => {
        running++;
        if (running > 1) overlaps++;
        await new Promise((resolve) => setTimeout(resolve, 1));
        ran.add(event.id);
        running--;
      },
    );
    // 30 events of one payment, all sent at once and retried until acknowledged: enough to make
    // every one of them meet the resource busy many times.
    const events = Array.from({ length: 30 }, (_, index) =>
      createTestEvent('payment.succeeded', { created: NOW + index, data: { id: 'pay_1' } as never }),
    );
    await Promise.all(
      events.map(async (event) => {
        for (;;) {
          const response = await deliver(webhooks, event, { secret });
          if (response.status === 200) return;
          expect(response.status).toBe(409);
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 5));
        }
      }),
    );
    expect(overlaps).toBe(0);
    expect(ran.size).toBe(30);
  });

  test('an event whose handler fails gives the resource back', async () => {
    let fail = true;
    const webhooks = createWebhooks({ secret, ordering: { 'user.updated': 'serialize' } })
      .on('user.updated', () => {
        if (fail) throw new Error('down');
      })
      .onError(() => {});
    const event = userEvent('user.updated', NOW, 'a');
    expect((await deliver(webhooks, event, { secret })).status).toBe(500);
    fail = false;
    expect((await deliver(webhooks, userEvent('user.updated', NOW + 1, 'b'), { secret })).status).toBe(200);
  });
});

describe('latest', () => {
  test('an event older than the newest handled never runs: 200 with x-webhook-stale, recorded done, logged, onStale told', async () => {
    const ran: string[] = [];
    const stale: StaleEvent[] = [];
    const logger = recordingLogger();
    const webhooks = createWebhooks({ secret, logger, ordering: { 'user.*': 'latest' } })
      .on('user.updated', (event) => {
        ran.push(event.data.name as string);
      })
      .onStale((_, info) => {
        stale.push(info);
      });
    const newer = userEvent('user.updated', NOW, 'newer');
    const older = userEvent('user.updated', NOW - 60, 'older');
    expect((await deliver(webhooks, newer, { secret })).status).toBe(200);
    const answer = await deliver(webhooks, older, { secret });
    expect(answer.status).toBe(200);
    expect(answer.headers['x-webhook-stale']).toBe('true');
    expect(JSON.parse(answer.body)).toEqual({ received: true, stale: true });
    expect(ran).toEqual(['newer']);
    expect(stale).toEqual([
      { resource: 'user:usr_1', position: orderingPosition(older), watermark: orderingPosition(newer) },
    ]);
    expect(logger.records.map((record) => record.outcome)).toEqual(['handled', 'stale']);
    // Recorded as handled: its retry is a duplicate, not stale again.
    const retry = await deliver(webhooks, older, { secret });
    expect(retry.headers['x-webhook-duplicate']).toBe('true');
    expect(stale).toHaveLength(1);
  });

  test('ties: created before updated in one second; the reverse arrival skips the creation; two updates of one second both run in arrival order', async () => {
    const ran: string[] = [];
    const webhooks = createWebhooks({ secret, ordering: { 'user.*': 'latest' } }).on(
      ['user.created', 'user.updated'],
      (event) => {
        ran.push(`${event.type}:${event.data.name as string}`);
      },
    );
    await deliver(webhooks, userEvent('user.updated', NOW, 'u1'), { secret });
    const created = await deliver(webhooks, userEvent('user.created', NOW, 'c'), { secret });
    expect(created.headers['x-webhook-stale']).toBe('true');
    await deliver(webhooks, userEvent('user.updated', NOW, 'u2'), { secret });
    expect(ran).toEqual(['user.updated:u1', 'user.updated:u2']);
    expect(orderingPosition({ type: 'user.created', created: NOW })).toBeLessThan(
      orderingPosition({ type: 'user.updated', created: NOW }),
    );
  });

  test('a deleted resource stays deleted: an update with a later created is stale; another deletion still runs', async () => {
    const ran: string[] = [];
    const webhooks = createWebhooks({ secret, ordering: { 'user.*': 'latest' } }).on('user.*', (event) => {
      ran.push(event.type);
    });
    await deliver(webhooks, userEvent('user.deleted', NOW - 10, 'gone'), { secret });
    const late = await deliver(webhooks, userEvent('user.updated', NOW, 'back'), { secret });
    expect(late.headers['x-webhook-stale']).toBe('true');
    await deliver(webhooks, userEvent('user.deleted', NOW, 'again'), { secret });
    expect(ran).toEqual(['user.deleted', 'user.deleted']);
  });

  test('resources are apart: an old event of another user runs', async () => {
    const ran: string[] = [];
    const webhooks = createWebhooks({ secret, ordering: { 'user.*': 'latest' } }).on(
      'user.updated',
      (event) => {
        ran.push(event.data.id as string);
      },
    );
    await deliver(webhooks, userEvent('user.updated', NOW, 'a'), { secret });
    await deliver(
      webhooks,
      createTestEvent('user.updated', { created: NOW - 100, data: { object: 'user', id: 'usr_2' } as never }),
      { secret },
    );
    expect(ran).toEqual(['usr_1', 'usr_2']);
  });

  test('a type left out of the rules is not guarded: an older event of it runs', async () => {
    const ran: number[] = [];
    const webhooks = createWebhooks({ secret, ordering: { 'user.updated': 'latest' } }).on(
      ['user.updated', 'user.created'],
      (event) => {
        ran.push(event.created);
      },
    );
    await deliver(webhooks, userEvent('user.updated', NOW, 'a'), { secret });
    await deliver(webhooks, userEvent('user.created', NOW - 100, 'b'), { secret });
    expect(ran).toEqual([NOW, NOW - 100]);
  });
});

describe('events without a resource', () => {
  test('run unguarded, and their log record says unordered: true', async () => {
    const ran: string[] = [];
    const logger = recordingLogger();
    const webhooks = createWebhooks({ secret, logger, ordering: { 'user.*': 'latest' } }).on(
      'user.updated',
      (event) => {
        ran.push(event.id);
      },
    );
    await deliver(webhooks, userEvent('user.updated', NOW, 'a'), { secret });
    const orphan = createTestEvent('user.updated', { created: NOW - 100, data: { id: undefined } as never });
    expect((await deliver(webhooks, orphan, { secret })).status).toBe(200);
    expect(ran).toHaveLength(2);
    expect(logger.records[1]).toMatchObject({ outcome: 'handled', unordered: true });
    expect(logger.records[0]!.unordered).toBeUndefined();
  });
});

describe('construction', () => {
  test('a store without the ordering operations fails with a ConfigurationError naming what is missing', () => {
    const inner = new MemoryStore();
    const partial: IdempotencyStore = {
      claim: (key, token, leaseMs) => inner.claim(key, token, leaseMs),
      complete: (key, token, ttlMs) => inner.complete(key, token, ttlMs),
      release: (key, token) => inner.release(key, token),
      claimResource: (resource, token, leaseMs) => inner.claimResource(resource, token, leaseMs),
    };
    const make = () => createWebhooks({ secret, store: partial, ordering: { 'user.*': 'latest' } });
    expect(make).toThrow(ConfigurationError);
    expect(make).toThrow(/`renewResource`, `releaseResource`, `completeOrdered`/);
  });

  test('unknown names, unknown modes and a watermark TTL shorter than an old event can arrive are refused', () => {
    expect(() => createWebhooks({ secret, ordering: { 'user.renamed': 'latest' } as never })).toThrow(
      /not an event the service sends/,
    );
    expect(() => createWebhooks({ secret, ordering: { 'user.*': 'newest' } as never })).toThrow(
      /'serialize' or 'latest'/,
    );
    expect(() =>
      createWebhooks({ secret, ordering: { 'user.*': 'latest' }, watermarkTtlSeconds: 3_600 }),
    ).toThrow(/shorter than an older event/);
    expect(() => createWebhooks({ secret, watermarkTtlSeconds: 90_000 })).toThrow(/only applies/);
  });

  test('a store failure of a guarded event answers 503 even with onStoreError: process (the guard never fails open)', async () => {
    const inner = new MemoryStore();
    const failing: IdempotencyStore = {
      claim: (key, token, leaseMs) => inner.claim(key, token, leaseMs),
      complete: (key, token, ttlMs) => inner.complete(key, token, ttlMs),
      release: (key, token) => inner.release(key, token),
      claimResource: () => Promise.reject(new Error('down')),
      renewResource: (resource, token, leaseMs) => inner.renewResource(resource, token, leaseMs),
      releaseResource: (resource, token) => inner.releaseResource(resource, token),
      completeOrdered: (...args) => inner.completeOrdered(...args),
    };
    let ran = 0;
    const webhooks = createWebhooks({
      secret,
      store: failing,
      onStoreError: 'process',
      ordering: { 'user.*': 'serialize' },
    })
      .on('user.updated', () => {
        ran++;
      })
      .onError(() => {});
    const answer = await deliver(webhooks, userEvent('user.updated', NOW, 'a'), { secret });
    expect(answer.status).toBe(503);
    expect(ran).toBe(0);
  });
});
