/**
 * "Every event handled once, none lost" where users really deploy: several registrations sharing one
 * store, secret rotation, handlers that outlive their lease, observers that fail, replays of events
 * dated ahead, bodies that are not UTF-8, handlers that mutate the event. Each test failed on the
 * core before the exactly-once work (issue 21) and passes after it.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import {
  createWebhooks,
  type DeliveryRecord,
  type IdempotencyStore,
  MemoryStore,
  type WebhookError,
  type WebhookLogger,
} from 'service-webhooks';
import { openTelemetry } from 'service-webhooks/opentelemetry';
import { createTestEvent, deliver, signPayload } from 'service-webhooks/testing';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { startOpenTelemetry } from '../support/opentelemetry.js';
import { sleep } from '../support/sleep.js';
import { FaultyStore, SpyStore } from './spy-store.js';

afterEach(() => {
  vi.restoreAllMocks();
});

/** A MemoryStore without `renew`: what a user's store written for the earlier contract looks like. */
function storeWithoutRenew(inner = new MemoryStore()): IdempotencyStore {
  return {
    claim: (key, token, leaseMs) => inner.claim(key, token, leaseMs),
    complete: (key, token, ttlMs) => inner.complete(key, token, ttlMs),
    release: (key, token) => inner.release(key, token),
  };
}

describe('one event, several registrations sharing a store', () => {
  test('two receivers with their own secrets on one MemoryStore each run the event once, no option set', async () => {
    const store = new MemoryStore();
    const runs = { a: 0, b: 0 };
    const a = createWebhooks({ secret: 'whsec_registration_a', store }).on('user.created', () => {
      runs.a++;
    });
    const b = createWebhooks({ secret: 'whsec_registration_b', store }).on('user.created', () => {
      runs.b++;
    });
    const event = createTestEvent('user.created');
    // The service delivers the event to both registrations, and retries each once more.
    const first = await Promise.all([
      deliver(a, event, { secret: 'whsec_registration_a' }),
      deliver(b, event, { secret: 'whsec_registration_b' }),
    ]);
    expect(first.map((response) => [response.status, response.headers['x-webhook-duplicate']])).toEqual([
      [200, undefined],
      [200, undefined],
    ]);
    const retries = await Promise.all([
      deliver(a, event, { secret: 'whsec_registration_a' }),
      deliver(b, event, { secret: 'whsec_registration_b' }),
    ]);
    expect(retries.map((response) => response.headers['x-webhook-duplicate'])).toEqual(['true', 'true']);
    expect(runs).toEqual({ a: 1, b: 1 });
  });

  test('two registrations sharing one secret are told apart by a namespace each', async () => {
    const store = new MemoryStore();
    const secret = 'whsec_shared_by_two_registrations';
    const runs: string[] = [];
    const a = createWebhooks({ secret, store, namespace: 'billing' }).onAny(() => {
      runs.push('billing');
    });
    const b = createWebhooks({ secret, store, namespace: 'crm' }).onAny(() => {
      runs.push('crm');
    });
    const event = createTestEvent('payment.succeeded');
    await deliver(a, event, { secret });
    await deliver(b, event, { secret });
    expect((await deliver(b, event, { secret })).headers['x-webhook-duplicate']).toBe('true');
    expect(runs.sort()).toEqual(['billing', 'crm']);
  });

  test('a second receiver on the same store with the same secret and no namespace is warned about once', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const store = new MemoryStore();
    createWebhooks({ secret: 'whsec_one', store });
    expect(warn).not.toHaveBeenCalled();
    createWebhooks({ secret: 'whsec_two', store });
    expect(warn).not.toHaveBeenCalled();
    createWebhooks({ secret: 'whsec_one', store });
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]?.[0])).toMatch(/share one store and one secret.*`namespace`/);
    // An explicit namespace says the sharing is meant: the same registration served twice.
    createWebhooks({ secret: 'whsec_one', store, namespace: 'shop' });
    createWebhooks({ secret: 'whsec_one', store, namespace: 'shop' });
    expect(warn).toHaveBeenCalledTimes(1);
  });

  test('rotating the secret never turns a retry into a second run: [old] → [new, old] → [new]', async () => {
    const store = new MemoryStore();
    let runs = 0;
    const receiver = (secret: string | string[]) =>
      createWebhooks({ secret, store }).on('project.updated', () => {
        runs++;
      });
    const event = createTestEvent('project.updated');
    expect((await deliver(receiver('whsec_old'), event, { secret: 'whsec_old' })).status).toBe(200);
    // The new secret is deployed beside the old one; the service now signs the retry with the new one.
    const rotating = receiver(['whsec_new', 'whsec_old']);
    const retry = await deliver(rotating, event, { secret: 'whsec_new' });
    expect(retry.headers['x-webhook-duplicate']).toBe('true');
    // The old secret is dropped: the record was copied to the new secret's scope.
    const after = await deliver(receiver('whsec_new'), event, { secret: 'whsec_new' });
    expect(after.headers['x-webhook-duplicate']).toBe('true');
    expect(runs).toBe(1);
  });

  test('during a rolling deploy, 20 concurrent copies across old and rotating receivers run once', async () => {
    const store = new MemoryStore();
    let runs = 0;
    const handler = async () => {
      runs++;
      await sleep(30);
    };
    const old = createWebhooks({ secret: 'whsec_old', store }).onAny(handler);
    const rotating = createWebhooks({ secret: ['whsec_new', 'whsec_old'], store }).onAny(handler);
    const event = createTestEvent('user.updated');
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        i % 2
          ? deliver(old, event, { secret: 'whsec_old' })
          : deliver(rotating, event, { secret: i % 4 ? 'whsec_old' : 'whsec_new' }),
      ),
    );
    expect(runs).toBe(1);
    expect(responses.filter((response) => response.status === 200)).not.toHaveLength(0);
    expect(responses.every((response) => response.status === 200 || response.status === 409)).toBe(true);
  });
});

describe('handlers that outlive the lease', () => {
  test('a handler running 3× the lease runs once while 20 retries arrive; the lease is renewed meanwhile', async () => {
    const store = new SpyStore();
    const errors: WebhookError[] = [];
    const webhooks = createWebhooks({
      secret: 'whsec_long',
      store,
      leaseSeconds: 1,
      handlerTimeoutMs: 200,
    }).onError((error) => {
      errors.push(error);
    });
    let runs = 0;
    webhooks.on('payment.succeeded', async () => {
      runs++;
      await sleep(3_000); // ignores ctx.signal
    });
    const event = createTestEvent('payment.succeeded');
    const first = deliver(webhooks, event, { secret: 'whsec_long' });
    // Twenty retries spread over the handler's three seconds, as concurrent copies and retries would be.
    const retries = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        sleep(100 + i * 140).then(() => deliver(webhooks, event, { secret: 'whsec_long' })),
      ),
    );
    expect((await first).status).toBe(503);
    expect(retries.map((response) => response.status).join()).toBe(Array(20).fill(409).join());
    await sleep(400);
    const after = await deliver(webhooks, event, { secret: 'whsec_long' });
    expect(after.headers['x-webhook-duplicate']).toBe('true');
    expect(runs).toBe(1);
    expect(store.calls.filter((call) => call.startsWith('claim')).length).toBeGreaterThan(20);
    // Renewed from the timeout on, every third of the lease, until the handler settled.
    expect(store.calls.filter((call) => call.startsWith('renew')).length).toBeGreaterThanOrEqual(6);
    expect(errors.map((error) => error.code)).toEqual(['handler_timeout']);
  }, 10_000);

  test('without renew in the store, the same handler runs twice: what the docs say such a store costs', async () => {
    const webhooks = createWebhooks({
      secret: 'whsec_long',
      store: storeWithoutRenew(),
      leaseSeconds: 1,
      handlerTimeoutMs: 200,
    }).onError(() => {});
    let runs = 0;
    webhooks.on('payment.succeeded', async () => {
      runs++;
      await sleep(1_600);
    });
    const event = createTestEvent('payment.succeeded');
    const first = deliver(webhooks, event, { secret: 'whsec_long' });
    await sleep(1_200); // past the one-second lease, nobody renewed it
    expect((await deliver(webhooks, event, { secret: 'whsec_long' })).status).toBe(503);
    await first;
    expect(runs).toBe(2);
  }, 10_000);

  test('a success that lands after the lease ended is recorded when nobody took the event over', async () => {
    const errors: WebhookError[] = [];
    const webhooks = createWebhooks({
      secret: 'whsec_late',
      store: storeWithoutRenew(),
      leaseSeconds: 1,
      handlerTimeoutMs: 200,
    }).onError((error) => {
      errors.push(error);
    });
    let runs = 0;
    let finished!: () => void;
    const done = new Promise<void>((resolve) => {
      finished = resolve;
    });
    webhooks.on('user.deleted', async () => {
      runs++;
      await sleep(1_300);
      finished();
    });
    const event = createTestEvent('user.deleted');
    expect((await deliver(webhooks, event, { secret: 'whsec_late' })).status).toBe(503);
    await done;
    await sleep(20);
    const retry = await deliver(webhooks, event, { secret: 'whsec_late' });
    expect(retry.headers['x-webhook-duplicate']).toBe('true');
    expect(runs).toBe(1);
    expect(errors.map((error) => error.code)).toEqual(['handler_timeout']);
  }, 10_000);

  test('the late outcome is logged as late, with the status the sender was given', async () => {
    const records: [string, DeliveryRecord][] = [];
    const logger: WebhookLogger = {
      info: (record) => void records.push(['info', record]),
      warn: (record) => void records.push(['warn', record]),
      error: (record) => void records.push(['error', record]),
    };
    const webhooks = createWebhooks({ secret: 'whsec_log', logger, handlerTimeoutMs: 20 });
    webhooks.on('user.created', () => sleep(60));
    webhooks.on('user.deleted', () => sleep(60).then(() => Promise.reject(new Error('late boom'))));
    const created = createTestEvent('user.created');
    const deleted = createTestEvent('user.deleted');
    await deliver(webhooks, created, { secret: 'whsec_log' });
    await deliver(webhooks, deleted, { secret: 'whsec_log' });
    await sleep(120);
    const late = records.filter(([, record]) => record.late);
    expect(late.map(([level, record]) => [level, record.eventId, record.outcome])).toEqual([
      ['warn', created.id, 'handled'],
      ['error', deleted.id, 'failed'],
    ]);
    for (const [, record] of late) {
      expect(record).toMatchObject({ status: 503, code: 'handler_timeout', late: true });
    }
    // Nothing claims a 200 the sender never got.
    expect(records.filter(([, record]) => record.status === 200)).toEqual([]);
  });
});

describe('observers never crash the process', () => {
  test('an onError listener and a logger whose promises reject: no unhandled rejection, the answers stand', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    const stderr = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const rejecting = async () => {
        throw new Error('observer is down too');
      };
      const webhooks = createWebhooks({
        secret: 'whsec_observers',
        store: new FaultyStore({ claim: 'reject' }),
        logger: { info: rejecting, warn: rejecting, error: rejecting },
      });
      webhooks.onError(rejecting);
      webhooks.on('user.created', () => {});
      const responses = await Promise.all(
        Array.from({ length: 3 }, () =>
          deliver(webhooks, createTestEvent('user.created'), { secret: 'whsec_observers' }),
        ),
      );
      expect(responses.map((response) => response.status)).toEqual([503, 503, 503]);
      await sleep(20);
      expect(unhandled).toEqual([]);
      // Said once on stderr, not once per failure.
      expect(stderr).toHaveBeenCalledTimes(1);
      expect(String(stderr.mock.calls[0]?.[0])).toMatch(/onError listener or the logger/);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe('replay window without a gap', () => {
  test('an event dated ahead is remembered until it can no longer be accepted, past dedupTtlSeconds', async () => {
    const store = new SpyStore();
    const ttls: number[] = [];
    const complete = store.complete.bind(store);
    store.complete = (key, token, ttlMs) => {
      ttls.push(ttlMs);
      return complete(key, token, ttlMs);
    };
    const webhooks = createWebhooks({
      secret: 'whsec_window',
      store,
      maxEventAgeSeconds: 1,
      dedupTtlSeconds: 1,
    });
    let runs = 0;
    webhooks.on('user.created', () => {
      runs++;
    });
    // Dated two seconds ahead (within the accepted five minutes of skew): acceptable for three seconds.
    const event = createTestEvent('user.created', { created: Math.floor(Date.now() / 1000) + 2 });
    expect((await deliver(webhooks, event, { secret: 'whsec_window' })).status).toBe(200);
    expect(ttls[0]).toBeGreaterThanOrEqual((event.created + 1) * 1000 - Date.now());
    await sleep(1_500); // past dedupTtlSeconds, still acceptable
    const replay = await deliver(webhooks, event, { secret: 'whsec_window' });
    expect(replay.headers['x-webhook-duplicate']).toBe('true');
    expect(runs).toBe(1);
  });
});

describe('the body is the signed bytes, exactly', () => {
  const secret = 'whsec_utf8';
  const envelope = (id: string) =>
    `{"id":"${id}","type":"user.created","created":${Math.floor(Date.now() / 1000)},"data":{"object":"user","id":"usr_1","name":"A","email":"a@example.com"},"livemode":false}`;
  /** The envelope as bytes, with `bytes` in place of `@` inside the id. */
  const withBytes = (bytes: number[]) => {
    const [before, after] = envelope('evt_@').split('@') as [string, string];
    return Uint8Array.from([
      ...new TextEncoder().encode(before),
      ...bytes,
      ...new TextEncoder().encode(after),
    ]);
  };

  test.each([
    ['a Buffer', (bytes: Uint8Array) => Buffer.from(bytes)],
    ['a Uint8Array', (bytes: Uint8Array) => bytes],
    ['an ArrayBuffer', (bytes: Uint8Array) => bytes.slice().buffer],
  ])(
    'invalid UTF-8 in %s is 400 invalid_request, so two signed ids cannot collapse into one',
    async (_, as) => {
      const webhooks = createWebhooks({ secret });
      let runs = 0;
      webhooks.on('user.created', () => {
        runs++;
      });
      for (const bytes of [[0xff], [0xfe], [0xc3, 0x28]]) {
        const body = withBytes(bytes);
        const response = await webhooks.handle({
          body: as(body),
          headers: { 'x-service-signature': signPayload(body, secret) },
        });
        expect(response.status).toBe(400);
        expect(JSON.parse(response.body)).toEqual({
          error: { code: 'invalid_request', message: 'The body is not valid UTF-8.' },
        });
      }
      expect(runs).toBe(0);
    },
  );

  test('a string body with a lone surrogate is 400, as its UTF-8 signature would cover U+FFFD instead', async () => {
    const webhooks = createWebhooks({ secret });
    const body = envelope('evt_\uD800');
    const response = await webhooks.handle({
      body,
      headers: { 'x-service-signature': signPayload(body, secret) },
    });
    expect(response.status).toBe(400);
  });

  test('valid multi-byte UTF-8 and a byte order mark still verify and run', async () => {
    const webhooks = createWebhooks({ secret });
    const ids: string[] = [];
    webhooks.on('user.created', (event) => {
      ids.push(event.id);
    });
    const body = Uint8Array.from([0xef, 0xbb, 0xbf, ...new TextEncoder().encode(envelope('evt_é✓🚀'))]);
    const response = await webhooks.handle({
      body: Buffer.from(body),
      headers: { 'x-service-signature': signPayload(body, secret) },
    });
    expect(response.status).toBe(200);
    expect(ids).toEqual(['evt_é✓🚀']);
  });
});

describe('a handler that mutates the event', () => {
  test('cannot strand the claim: the core completes the id it claimed', async () => {
    const errors: WebhookError[] = [];
    const webhooks = createWebhooks({ secret: 'whsec_mutate' }).onError((error) => {
      errors.push(error);
    });
    let runs = 0;
    webhooks.on('project.created', async (event) => {
      runs++;
      event.id = 'evt_rewritten_by_handler';
      (event as { created: number }).created = 0;
    });
    const event = createTestEvent('project.created');
    expect((await deliver(webhooks, event, { secret: 'whsec_mutate' })).status).toBe(200);
    const retry = await deliver(webhooks, event, { secret: 'whsec_mutate' });
    expect(retry.status).toBe(200);
    expect(retry.headers['x-webhook-duplicate']).toBe('true');
    expect(runs).toBe(1);
    expect(errors).toEqual([]);
  });
});

describe('telemetry on, an asynchronous store: a failed delivery gives its claim back', () => {
  /** A SpyStore (its calls answer with promises) that also keeps each claim's and release's key and token. */
  class KeyedSpyStore extends SpyStore {
    readonly claims: (readonly [key: string, token: string])[] = [];
    readonly releases: (readonly [key: string, token: string])[] = [];
    override claim(key: string, token: string, leaseMs: number) {
      this.claims.push([key, token]);
      return super.claim(key, token, leaseMs);
    }
    override release(key: string, token: string) {
      this.releases.push([key, token]);
      return super.release(key, token);
    }
  }

  test("the release step runs store.release with the claim's key and token, and the retry right after is claimed, not 409", async () => {
    // Through the telemetry step around store.release: a run that skipped the release there kept the
    // claim for the whole lease (45 s), so the sender's retry got 409 in_progress instead of a run.
    const otel = startOpenTelemetry();
    try {
      const store = new KeyedSpyStore();
      const secret = 'whsec_release_step';
      const { tracerProvider, meterProvider } = otel;
      let runs = 0;
      const webhooks = createWebhooks({
        secret,
        store,
        telemetry: openTelemetry({ tracerProvider, meterProvider }),
      }).on('user.created', async () => {
        runs++;
        if (runs === 1) throw new Error('the mail server is down');
      });
      webhooks.onError(() => {});
      const event = createTestEvent('user.created');

      expect((await deliver(webhooks, event, { secret })).status).toBe(500);
      expect(store.claims).toHaveLength(1);
      expect(store.releases).toEqual(store.claims);
      const release = otel.spans().find((span) => span.name === 'webhook.store.release');
      expect(release?.parentSpanContext?.spanId).toBe(otel.span('webhook.delivery').spanContext().spanId);

      const retry = await deliver(webhooks, event, { secret });
      expect(retry.status).toBe(200);
      expect(retry.headers['x-webhook-duplicate']).toBeUndefined();
      expect(runs).toBe(2);
      expect(store.calls).toEqual([
        `claim ${store.claims[0]![0]}`,
        `release ${store.claims[0]![0]}`,
        `claim ${store.claims[0]![0]}`,
        `complete ${store.claims[0]![0]}`,
      ]);
    } finally {
      await otel.shutdown();
    }
  });
});

describe('handle() never rejects', () => {
  const webhooks = createWebhooks({ secret: 'whsec_never' });

  test.each([
    ['a null signature header (as Lambda events carry)', { 'x-service-signature': null }, 401],
    ['null headers', null, 401],
    ['undefined headers', undefined, 401],
    ['a header list of non-strings', { 'x-service-signature': [1, null] }, 401],
  ])('%s: a status-table answer', async (_, headers, status) => {
    const response = await webhooks.handle({ body: '{}', headers: headers as never });
    expect(response.status).toBe(status);
    expect(JSON.parse(response.body).error.code).toBe('missing_signature');
  });

  test.each([
    ['no input', undefined],
    ['null input', null],
    ['a number', 42],
  ])('%s: 500 raw_body_unavailable, reported', async (_, input) => {
    const response = await webhooks.handle(input as never);
    expect(response.status).toBe(500);
    expect(JSON.parse(response.body).error.code).toBe('raw_body_unavailable');
  });

  test('a method that is not POST gets 405 with Allow: POST (RFC 9110)', async () => {
    const response = await webhooks.handle({ body: '', headers: {}, method: 'GET' });
    expect(response.status).toBe(405);
    expect(response.headers.allow).toBe('POST');
  });
});

describe('failure records keep the error with pino', () => {
  test("pino's err serializer sees message, code and cause", async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, callback) {
        lines.push(String(chunk));
        callback();
      },
    });
    const logger = pino({ level: 'info' }, sink);
    const webhooks = createWebhooks({ secret: 'whsec_pino', logger });
    webhooks.on('user.created', () => {
      throw Object.assign(new Error('database refused the insert'), { code: 'ECONNREFUSED' });
    });
    await deliver(webhooks, createTestEvent('user.created'), { secret: 'whsec_pino' });
    const failure = lines.map((line) => JSON.parse(line)).find((entry) => entry.outcome === 'failed');
    expect(failure).toMatchObject({
      msg: 'webhook delivery failed',
      status: 500,
      code: 'handler_failed',
      err: {
        type: 'HandlerFailedError',
        message: expect.stringContaining('A handler threw'),
        code: 'handler_failed',
        stack: expect.any(String),
      },
    });
    expect(JSON.stringify(failure.err)).toContain('database refused the insert');
    // The failure is printed once, under err.
    expect(failure.error).toBeUndefined();
  });
});

describe('a receiver that refuses every delivery says so once on stderr (no logger)', () => {
  test.each([
    ['a wrong secret', 'invalid_signature', 'whsec_other'],
    ['a skewed clock', 'event_too_old', 'whsec_right'],
  ])('%s', async (_, code, signingSecret) => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const webhooks = createWebhooks({ secret: 'whsec_right' }).on('user.created', () => {});
    const created = code === 'event_too_old' ? Math.floor(Date.now() / 1000) - 90_000 : undefined;
    for (let i = 0; i < 10; i++) {
      const event = createTestEvent('user.created', created ? { created } : {});
      const response = await deliver(webhooks, event, { secret: signingSecret });
      expect(JSON.parse(response.body).error.code).toBe(code);
    }
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]?.[0])).toContain(code);
  });

  test('each cause is counted on its own and names itself; a valid signature with a bad body resets both', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const secret = 'whsec_right';
    const webhooks = createWebhooks({ secret }).on('user.created', () => {});
    const forged = () => deliver(webhooks, createTestEvent('user.created'), { secret: 'whsec_forged' });
    const missing = () => webhooks.handle({ body: '{}', headers: {} });
    const validSignatureBadBody = () =>
      webhooks.handle({
        body: '{"id":1}',
        headers: { 'x-service-signature': signPayload('{"id":1}', secret) },
      });
    const tooOld = () =>
      deliver(
        webhooks,
        createTestEvent('user.created', { created: Math.floor(Date.now() / 1000) - 90_000 }),
        {
          secret,
        },
      );
    // The reviewer's sequence: the secret's count was reset by nothing, and the clock was blamed.
    for (const send of [forged, forged, missing, validSignatureBadBody, validSignatureBadBody, tooOld])
      await send();
    expect(warn).not.toHaveBeenCalled();
    // Forgeries between too-old events say nothing of the clock: its count goes on (3 in a row verified).
    for (const send of [forged, tooOld, forged, tooOld]) await send();
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]?.[0])).toMatch(
      /last 3 deliveries whose signature verified .*event_too_old.*clock/,
    );
    // The wrong secret is named on its own once it repeats, even within the clock warning's hour.
    for (const send of [forged, forged, forged]) await send();
    expect(warn).toHaveBeenCalledTimes(2);
    expect(String(warn.mock.calls[1]?.[0])).toMatch(/last 3 deliveries .*invalid_signature.*secret/);
  });

  test('missing signatures (internet noise) and a receiver that works are not warned about', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const webhooks = createWebhooks({ secret: 'whsec_right' }).on('user.created', () => {});
    for (let i = 0; i < 10; i++) {
      await webhooks.handle({ body: '{}', headers: {} });
      await deliver(webhooks, createTestEvent('user.created'), { secret: i % 2 ? 'whsec_right' : 'x' });
    }
    expect(warn).not.toHaveBeenCalled();
  });
});
