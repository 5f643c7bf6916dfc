import {
  ConfigurationError,
  createWebhooks,
  type DeliveryRecord,
  EventTooOldError,
  InvalidRequestError,
  InvalidSignatureError,
  KEEPS_STDERR,
  MemoryStore,
  MissingSignatureError,
  PayloadTooLargeError,
  RawBodyUnavailableError,
  type WebhookLogger,
  type WebhooksOptions,
} from 'service-webhooks';
import { createTestEvent, deliver, signPayload } from 'service-webhooks/testing';
import { describe, expect, test, vi } from 'vitest';
import { sealed } from '../support/sealed-entry.js';

const secret = 'whsec_receiver';

describe('concurrency', () => {
  test('50 concurrent deliveries of one event: the handler runs once; the rest are 200-duplicate or 409', async () => {
    const webhooks = createWebhooks({ secret });
    let calls = 0;
    webhooks.on('payment.succeeded', async () => {
      calls++;
      await new Promise((resolve) => setTimeout(resolve, 20));
    });
    const event = createTestEvent('payment.succeeded');
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => deliver(webhooks, event, { secret })),
    );
    expect(calls).toBe(1);
    const handled = responses.filter((r) => r.status === 200 && !r.headers['x-webhook-duplicate']);
    const duplicates = responses.filter(
      (r) => r.status === 200 && r.headers['x-webhook-duplicate'] === 'true',
    );
    const inProgress = responses.filter((r) => r.status === 409);
    expect(handled).toHaveLength(1);
    expect(duplicates.length + inProgress.length).toBe(49);
  });

  test('distinct events delivered concurrently are each handled once', async () => {
    const webhooks = createWebhooks({ secret });
    const seen = new Map<string, number>();
    webhooks.onAny((event) => {
      seen.set(event.id, (seen.get(event.id) ?? 0) + 1);
    });
    const events = Array.from({ length: 200 }, (_, i) =>
      createTestEvent(i % 2 ? 'user.updated' : 'project.updated'),
    );
    const responses = await Promise.all(events.map((event) => deliver(webhooks, event, { secret })));
    expect(responses.every((r) => r.status === 200)).toBe(true);
    expect([...seen.values()].every((count) => count === 1)).toBe(true);
    expect(seen.size).toBe(200);
  });
});

describe('routing', () => {
  test('one name, an array, a wildcard and onAny all run, in registration order', async () => {
    const webhooks = createWebhooks({ secret });
    const order: string[] = [];
    webhooks.onAny(() => {
      order.push('any');
    });
    webhooks.on('payment.*', () => {
      order.push('wildcard');
    });
    webhooks.on(['payment.failed', 'payment.refunded'], () => {
      order.push('array');
    });
    webhooks.on('payment.refunded', () => {
      order.push('exact');
    });
    webhooks.on('user.created', () => {
      order.push('other');
    });
    await deliver(webhooks, createTestEvent('payment.refunded'), { secret });
    expect(order).toEqual(['any', 'wildcard', 'array', 'exact']);
    order.length = 0;
    await deliver(webhooks, createTestEvent('payment.succeeded'), { secret });
    expect(order).toEqual(['any', 'wildcard']);
  });

  test('synchronous, asynchronous and thenable-returning handlers run strictly in order', async () => {
    const webhooks = createWebhooks({ secret });
    const order: string[] = [];
    webhooks.on('user.updated', () => {
      order.push('sync 1');
    });
    webhooks.on('user.updated', async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      order.push('async');
    });
    webhooks.on('user.updated', () => {
      order.push('sync 2');
      // A thenable that is not a Promise is awaited like one.
      return {
        // biome-ignore lint/suspicious/noThenProperty: this test is about handlers that return thenables
        then: (resolve: () => void) =>
          setTimeout(() => {
            order.push('thenable');
            resolve();
          }, 5),
      };
    });
    webhooks.on('user.updated', () => {
      order.push('sync 3');
    });
    expect((await deliver(webhooks, createTestEvent('user.updated'), { secret })).status).toBe(200);
    expect(order).toEqual(['sync 1', 'async', 'sync 2', 'thenable', 'sync 3']);
  });

  test('a synchronous handler that throws after an asynchronous one fails the delivery', async () => {
    const webhooks = createWebhooks({ secret });
    webhooks.onError(() => {});
    webhooks.on('user.updated', async () => {});
    webhooks.on('user.updated', () => {
      throw new Error('sync failure');
    });
    expect((await deliver(webhooks, createTestEvent('user.updated'), { secret })).status).toBe(500);
  });

  test('time spent in synchronous handlers counts against the budget of the asynchronous ones', async () => {
    const webhooks = createWebhooks({ secret, handlerTimeoutMs: 100 });
    webhooks.onError(() => {});
    webhooks.on('user.updated', () => {
      const until = performance.now() + 80;
      while (performance.now() < until) {
        // busy: a synchronous handler that takes most of the budget
      }
    });
    webhooks.on('user.updated', () => new Promise((resolve) => setTimeout(resolve, 60)));
    const response = await deliver(webhooks, createTestEvent('user.updated'), { secret });
    expect(response.status).toBe(503);
  });

  test('a failing handler stops the ones after it, so the retry runs them all again', async () => {
    const webhooks = createWebhooks({ secret });
    webhooks.onError(() => {});
    const ran: string[] = [];
    let fail = true;
    webhooks.on('user.deleted', () => {
      ran.push('first');
      if (fail) throw new Error('first failed');
    });
    webhooks.on('user.deleted', () => {
      ran.push('second');
    });
    const event = createTestEvent('user.deleted');
    expect((await deliver(webhooks, event, { secret })).status).toBe(500);
    fail = false;
    expect((await deliver(webhooks, event, { secret })).status).toBe(200);
    expect(ran).toEqual(['first', 'first', 'second']);
  });

  test('the handler context says which secret signed the delivery (rotation)', async () => {
    const webhooks = createWebhooks({ secret: ['whsec_new', 'whsec_old'] });
    const indexes: number[] = [];
    webhooks.onAny((_event, ctx) => {
      indexes.push(ctx.secretIndex);
    });
    await deliver(webhooks, createTestEvent('user.created'), { secret: 'whsec_old' });
    await deliver(webhooks, createTestEvent('user.created'), { secret: 'whsec_new' });
    expect(indexes).toEqual([1, 0]);
  });

  test('unknown names are refused at registration with the list of valid ones', () => {
    const webhooks = createWebhooks({ secret });
    for (const name of ['user.creatd', 'invoice.*', '*', 'user', '', 'toString']) {
      // @ts-expect-error deliberately wrong names, as plain JavaScript users could write
      expect(() => webhooks.on(name, () => {}), name).toThrow(ConfigurationError);
    }
    expect(() => webhooks.on([], () => {})).toThrow(/at least one/);
    expect(() => webhooks.on('user.created', 'nope' as never)).toThrow(ConfigurationError);
  });

  test('payload keys such as __proto__ and constructor pollute nothing', async () => {
    const webhooks = createWebhooks({ secret });
    let data: Record<string, unknown> | undefined;
    webhooks.on('user.created', (event) => {
      data = event.data as unknown as Record<string, unknown>;
    });
    const event = createTestEvent('user.created');
    const json = JSON.stringify(event).replace(
      '"object":"user"',
      '"object":"user","__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}',
    );
    const body = `{"__proto__":{"polluted":true},${json.slice(1)}`;
    expect((await deliver(webhooks, undefined, { secret, body })).status).toBe(200);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(data)).toBe(Object.prototype);
    expect(Object.hasOwn(data ?? {}, '__proto__')).toBe(true);
  });
});

describe('handle() input', () => {
  test('headers as a Fetch Headers, as arrays, in any case', async () => {
    const webhooks = createWebhooks({ secret });
    webhooks.onAny(() => {});
    const body = JSON.stringify(createTestEvent('user.created'));
    const signature = signPayload(body, secret);
    expect(
      (await webhooks.handle({ body, headers: new Headers({ 'X-Service-Signature': signature }) })).status,
    ).toBe(200);
    const body2 = JSON.stringify(createTestEvent('user.created'));
    expect(
      (
        await webhooks.handle({
          body: body2,
          headers: { 'X-SERVICE-SIGNATURE': [signPayload(body2, secret)] },
        })
      ).status,
    ).toBe(200);
    const twice = await webhooks.handle({
      body: body2,
      headers: { 'x-service-signature': [signature, signature] },
    });
    expect(twice.status).toBe(401);
  });

  // Buffers are decoded by Buffer#toString, other bytes by TextDecoder: both must agree, BOM included.
  const bodyKinds: [string, (bytes: Uint8Array) => Uint8Array | ArrayBuffer | string][] = [
    ['Buffer', (bytes) => Buffer.from(bytes)],
    ['Uint8Array', (bytes) => bytes],
    ['ArrayBuffer', (bytes) => bytes.slice().buffer],
    ['string', (bytes) => new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes)],
  ];
  test.each(bodyKinds)(
    'a %s body with a byte order mark is verified as received; one BOM is dropped, not two',
    async (_kind, toBody) => {
      const webhooks = createWebhooks({ secret });
      webhooks.onAny(() => {});
      const json = JSON.stringify(createTestEvent('user.created'));
      const once = new TextEncoder().encode(`\uFEFF${json}`);
      expect(once[0]).toBe(0xef);
      const twice = new TextEncoder().encode(`\uFEFF\uFEFF${json}`);
      const deliver = (bytes: Uint8Array) =>
        webhooks.handle({
          body: toBody(bytes),
          headers: { 'x-service-signature': signPayload(bytes, secret) },
        });
      expect((await deliver(once)).status).toBe(200);
      const refused = await deliver(twice);
      expect(refused.status).toBe(400);
      expect(JSON.parse(refused.body).error.code).toBe('invalid_request');
    },
  );

  test('a parsed object instead of raw bytes: 500 raw_body_unavailable, reported with the fix', async () => {
    const webhooks = createWebhooks({ secret });
    const errors: Error[] = [];
    webhooks.onError((error) => errors.push(error));
    const response = await webhooks.handle({ body: { id: 'evt_1' } as never, headers: {} });
    expect(response.status).toBe(500);
    expect(JSON.parse(response.body).error.code).toBe('raw_body_unavailable');
    expect(errors[0]).toBeInstanceOf(RawBodyUnavailableError);
    expect(errors[0]?.message).toMatch(/body parser ran before the webhook route/);
    expect(response.body).not.toMatch(/body parser/);
  });

  test('a shorter per-delivery handler budget (a Lambda near its end) wins over handlerTimeoutMs', async () => {
    const webhooks = createWebhooks({ secret });
    webhooks.onError(() => {});
    webhooks.on('user.created', () => new Promise((resolve) => setTimeout(resolve, 200)));
    const body = JSON.stringify(createTestEvent('user.created'));
    const response = await webhooks.handle({
      body,
      headers: { 'x-service-signature': signPayload(body, secret) },
      handlerTimeoutMs: 20,
    });
    expect(response.status).toBe(503);
  });
});

describe('verifyAndParse', () => {
  test('returns the event without deduplicating or running handlers', async () => {
    const store = new MemoryStore();
    const claim = vi.spyOn(store, 'claim');
    const webhooks = createWebhooks({ secret, store });
    let calls = 0;
    webhooks.onAny(() => {
      calls++;
    });
    const event = createTestEvent('user.created');
    const body = JSON.stringify(event);
    expect(await webhooks.verifyAndParse(body, signPayload(body, secret))).toEqual(event);
    expect(await webhooks.verifyAndParse(body, signPayload(body, secret))).toEqual(event);
    expect(calls).toBe(0);
    expect(claim).not.toHaveBeenCalled();
  });

  test('throws the typed error of each rejection', async () => {
    const webhooks = createWebhooks({ secret, maxBodyBytes: 4096 });
    const body = JSON.stringify(createTestEvent('user.created'));
    await expect(webhooks.verifyAndParse(body, null)).rejects.toBeInstanceOf(MissingSignatureError);
    await expect(webhooks.verifyAndParse(body, 'sha256=00')).rejects.toBeInstanceOf(InvalidSignatureError);
    await expect(webhooks.verifyAndParse('nope', signPayload('nope', secret))).rejects.toBeInstanceOf(
      InvalidRequestError,
    );
    const old = JSON.stringify(createTestEvent('user.created', { created: 1 }));
    await expect(webhooks.verifyAndParse(old, signPayload(old, secret))).rejects.toBeInstanceOf(
      EventTooOldError,
    );
    const big = 'x'.repeat(4097);
    await expect(webhooks.verifyAndParse(big, signPayload(big, secret))).rejects.toMatchObject({
      code: 'payload_too_large',
      status: 413,
    });
    await expect(webhooks.verifyAndParse(big, signPayload(big, secret))).rejects.toBeInstanceOf(
      PayloadTooLargeError,
    );
  });
});

describe('the age window, at its edges', () => {
  test('an event exactly maxEventAgeSeconds old, or exactly 5 minutes ahead, is accepted; one second more is not', async () => {
    vi.useFakeTimers({ now: 1_800_000_000_000, toFake: ['Date'] });
    try {
      const now = Date.now() / 1000;
      const webhooks = createWebhooks({ secret, maxEventAgeSeconds: 600, dedupTtlSeconds: 600 });
      const parse = (created: number) => {
        const body = JSON.stringify(createTestEvent('user.created', { created }));
        return webhooks.verifyAndParse(body, signPayload(body, secret));
      };
      await expect(parse(now - 600)).resolves.toMatchObject({ created: now - 600 });
      await expect(parse(now - 601)).rejects.toBeInstanceOf(EventTooOldError);
      await expect(parse(now + 300)).resolves.toMatchObject({ created: now + 300 });
      await expect(parse(now + 301)).rejects.toBeInstanceOf(EventTooOldError);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('logger', () => {
  function recorder() {
    const records: { level: string; record: DeliveryRecord }[] = [];
    const logger: WebhookLogger = {
      info: (record) => records.push({ level: 'info', record }),
      warn: (record) => records.push({ level: 'warn', record }),
      error: (record) => records.push({ level: 'error', record }),
    };
    return { records, logger };
  }

  test('one structured record per delivery, never a secret or a body', async () => {
    const { records, logger } = recorder();
    const webhooks = createWebhooks({ secret: ['whsec_logger_new', 'whsec_logger_old'], logger });
    webhooks.on('user.created', () => {});
    webhooks.on('user.deleted', () => {
      throw new Error('nope');
    });
    const event = createTestEvent('user.created', { data: { email: 'private@example.com' } });
    await deliver(webhooks, event, { secret: 'whsec_logger_old' });
    await deliver(webhooks, event, { secret: 'whsec_logger_old' });
    await deliver(webhooks, event, { secret: 'wrong' });
    await deliver(webhooks, createTestEvent('user.deleted'), { secret: 'whsec_logger_new' });

    expect(records.map((r) => [r.level, r.record.outcome, r.record.status, r.record.code])).toEqual([
      ['info', 'handled', 200, undefined],
      ['info', 'duplicate', 200, undefined],
      ['warn', 'rejected', 401, 'invalid_signature'],
      ['error', 'failed', 500, 'handler_failed'],
    ]);
    expect(records[0]?.record).toMatchObject({
      eventId: event.id,
      eventType: 'user.created',
      secretIndex: 1,
    });
    expect(records[0]?.record.durationMs).toBeGreaterThanOrEqual(0);
    // A rejected delivery is unverified: nothing of it is repeated.
    expect(records[2]?.record.eventId).toBeUndefined();
    const text = JSON.stringify(records.map((r) => ({ ...r.record, error: r.record.error?.message })));
    expect(text).not.toMatch(/whsec_|private@example\.com|Ada Lovelace/);
  });

  test('a throwing logger or onError listener does not change the answer', async () => {
    const broken = () => {
      throw new Error('observer broke');
    };
    const webhooks = createWebhooks({ secret, logger: { info: broken, warn: broken, error: broken } });
    webhooks.onError(broken);
    webhooks.on('user.created', () => {
      throw new Error('handler broke');
    });
    expect((await deliver(webhooks, createTestEvent('user.created'), { secret })).status).toBe(500);
  });

  test('failures go to stderr when nobody listens, so they never vanish', async () => {
    const spy = vi.spyOn(console, 'error').mockImplementation(() => {});
    const webhooks = createWebhooks({ secret });
    webhooks.on('user.created', () => {
      throw new Error('unobserved');
    });
    await deliver(webhooks, createTestEvent('user.created'), { secret });
    expect(spy).toHaveBeenCalledOnce();
    expect(String(spy.mock.calls[0]?.[0])).toContain('handler_failed');
    spy.mockRestore();
  });

  test('a logger that only looks on (KEEPS_STDERR) gets every record, and stderr says what it says without a logger', async () => {
    const spy = vi.spyOn(console, 'error').mockImplementation(() => {});
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const said = async (logger: WebhookLogger | undefined, listen: boolean) => {
      spy.mockClear();
      warn.mockClear();
      const webhooks = createWebhooks(logger ? { secret, logger } : { secret });
      if (listen) webhooks.onError(() => {});
      webhooks.on('user.created', () => {
        throw new Error('unobserved');
      });
      await deliver(webhooks, createTestEvent('user.created'), { secret });
      for (let i = 0; i < 3; i++)
        await deliver(webhooks, createTestEvent('user.created'), { secret: 'wrong' });
      return [...spy.mock.calls, ...warn.mock.calls].map((call) => call.map(String).join(' '));
    };
    const { records, logger } = recorder();
    const onlooker = Object.assign(logger, { [KEEPS_STDERR]: true as const });
    for (const listen of [false, true]) {
      expect(await said(onlooker, listen)).toEqual(await said(undefined, listen));
    }
    expect(await said(undefined, false)).toHaveLength(2); // the failure, then the wrong secret
    expect(await said(recorder().logger, false)).toEqual([]); // a logger that speaks shows them itself
    expect(records.map((r) => r.record.status)).toEqual([500, 401, 401, 401, 500, 401, 401, 401]);
    spy.mockRestore();
    warn.mockRestore();
  });
});

describe('options are validated at construction, saying what to change', () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['no secret', { secret: undefined }, /`secret` is missing/],
    ['an empty secret', { secret: '' }, /`secret` is empty: is the environment variable/],
    ['an empty secret list', { secret: [] }, /`secret` is missing/],
    ['an empty secret in a list', { secret: ['a', ''] }, /`secret` \(entry 1\) is empty/],
    [
      'dedup TTL under the replay window',
      { dedupTtlSeconds: 600, maxEventAgeSeconds: 3600 },
      /Raise dedupTtlSeconds to at least 3600/,
    ],
    ['a lease past the first retry', { leaseSeconds: 90 }, /must be below 60.*Use at most 59/],
    ['a lease shorter than the handler budget', { leaseSeconds: 20 }, /longer than `handlerTimeoutMs`/],
    [
      'a handler budget past the sender timeout',
      { handlerTimeoutMs: 30_000, leaseSeconds: 59 },
      /below the sender's 30000 ms/,
    ],
    ['a fractional limit', { maxBodyBytes: 1.5 }, /`maxBodyBytes` must be a positive whole number/],
    ['a negative limit', { storeTimeoutMs: -1 }, /`storeTimeoutMs` must be a positive whole number/],
    ['an unknown store error policy', { onStoreError: 'ignore' as never }, /'reject' or 'process'/],
    [
      'a store without claim',
      { store: { complete() {}, release() {} } as never },
      /`claim` method is missing/,
    ],
    ['a logger without warn', { logger: { info() {}, error() {} } as never }, /info, warn and error/],
    [
      'telemetry that is not a plug-in (the OpenTelemetry API itself, say)',
      { telemetry: { trace: {}, metrics: {} } as never },
      /`telemetry` must be a telemetry plug-in, such as `openTelemetry\(\)`/,
    ],
  ];
  for (const [label, options, message] of cases) {
    test(label, () => {
      expect(() => createWebhooks({ secret, ...options } as WebhooksOptions)).toThrow(ConfigurationError);
      expect(() => createWebhooks({ secret, ...options } as WebhooksOptions)).toThrow(message);
    });
  }

  test('a lower dedupTtlSeconds alone lowers the replay window with it', () => {
    expect(() => createWebhooks({ secret, dedupTtlSeconds: 3600 })).not.toThrow();
  });
});

describe('how long a handled id is remembered', () => {
  /** A MemoryStore that records the time-to-live of each completion. */
  class TtlRecordingStore extends MemoryStore {
    readonly ttls: number[] = [];
    override complete(key: string, token: string, ttlMs: number) {
      this.ttls.push(ttlMs);
      return super.complete(key, token, ttlMs);
    }
  }

  test('dedupTtlSeconds, in milliseconds, when it outlasts the replay window (in the request and in a worker)', async () => {
    const store = new TtlRecordingStore();
    const webhooks = createWebhooks({ secret, store, dedupTtlSeconds: 7200, maxEventAgeSeconds: 60 });
    webhooks.on('user.created', () => {});
    expect((await deliver(webhooks, createTestEvent('user.created'), { secret })).status).toBe(200);
    const event = createTestEvent('user.created');
    expect(
      await webhooks.process(await sealed({ event, receivedAt: Date.now(), secretIndex: 0 }, secret)),
    ).toBe('handled');
    expect(store.ttls).toEqual([7_200_000, 7_200_000]);
  });

  test('the rest of the replay window, with a second of margin, when that is longer', async () => {
    const store = new TtlRecordingStore();
    const webhooks = createWebhooks({ secret, store, dedupTtlSeconds: 3600, maxEventAgeSeconds: 3600 });
    webhooks.on('user.created', () => {});
    // Dated 4 minutes ahead (the 5 minutes of skew allow it): acceptable until an hour after
    // `created`, 64 minutes from now, which outlasts dedupTtlSeconds.
    const ahead = createTestEvent('user.created', { created: Math.floor(Date.now() / 1000) + 240 });
    expect((await deliver(webhooks, ahead, { secret })).status).toBe(200);
    const [ttl] = store.ttls;
    expect(ttl).toBeGreaterThan((3600 + 240) * 1000);
    expect(ttl).toBeLessThanOrEqual((3600 + 240 + 2) * 1000);
  });
});

describe('runtimes without node:crypto', () => {
  test('the core falls back to Web Crypto and answers the same (node:crypto hidden for this test)', async () => {
    // Edge runtimes cannot be started here; hiding process.getBuiltinModule reproduces what the core sees there.
    const original = process.getBuiltinModule;
    vi.resetModules();
    (process as { getBuiltinModule?: unknown }).getBuiltinModule = undefined;
    try {
      const edge = await import('../../src/index.js');
      expect(() => edge.signPayload('x', 's')).toThrow(/signPayloadWeb/);
      const webhooks = edge.createWebhooks({ secret: ['other', secret] });
      let index = -1;
      webhooks.on('user.created', (_event, ctx) => {
        index = ctx.secretIndex;
      });
      const event = createTestEvent('user.created');
      const body = JSON.stringify(event);
      const ok = await webhooks.handle({
        body,
        headers: { 'x-service-signature': signPayload(body, secret) },
      });
      expect(ok.status).toBe(200);
      expect(index).toBe(1);
      const forged = await webhooks.handle({
        body,
        headers: { 'x-service-signature': signPayload(body, 'x') },
      });
      expect(forged.status).toBe(401);
    } finally {
      process.getBuiltinModule = original;
      vi.resetModules();
    }
  });
});
