/**
 * Every row of the status table in DESIGN.md: status, code, how often handlers ran, and that the
 * store was not touched before the signature passed.
 */
import {
  createWebhooks,
  HandlerFailedError,
  HandlerTimeoutError,
  LeaseLostError,
  RateLimitedError,
  StoreUnavailableError,
  type WebhookError,
  type WebhookResponse,
  type WebhooksOptions,
} from 'service-webhooks';
import { createTestEvent, deliver, signPayload } from 'service-webhooks/testing';
import { describe, expect, test } from 'vitest';
import { FaultyStore, OrderedSpyStore, SpyStore } from './spy-store.js';

const secret = 'whsec_status_table';
/** A named dedup scope, so the store keys these tests expect are plain to read. */
const namespace = 'status';
const key = (eventId: string) => `${namespace}:${eventId}`;

function setup(options: Partial<WebhooksOptions> = {}) {
  const store = (options.store as SpyStore | undefined) ?? new SpyStore();
  const errors: WebhookError[] = [];
  const webhooks = createWebhooks({ secret, namespace, ...options, store });
  webhooks.onError((error) => errors.push(error));
  return { webhooks, store, errors };
}

function errorOf(response: WebhookResponse) {
  const body = JSON.parse(response.body) as { error: { code: string; message: string } };
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message']);
  expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
  return body.error;
}

const sendRaw = (
  webhooks: ReturnType<typeof setup>['webhooks'],
  body: string,
  headers: Record<string, string>,
) => webhooks.handle({ body, headers });

describe('status table', () => {
  test('200 handled: all handlers succeeded; claim then complete', async () => {
    const { webhooks, store } = setup();
    let calls = 0;
    webhooks.on('user.created', () => {
      calls++;
    });
    const event = createTestEvent('user.created');
    const response = await deliver(webhooks, event, { secret });
    expect(response.status).toBe(200);
    expect(JSON.parse(response.body)).toEqual({ received: true });
    expect(response.headers['x-webhook-duplicate']).toBeUndefined();
    expect(calls).toBe(1);
    expect(store.calls).toEqual([`claim ${key(event.id)}`, `complete ${key(event.id)}`]);
  });

  test('200 handled: no handler registered for this type (the store is not needed)', async () => {
    const { webhooks, store } = setup();
    webhooks.on('user.created', () => {});
    const response = await deliver(webhooks, createTestEvent('payment.failed'), { secret });
    expect(response.status).toBe(200);
    expect(store.calls).toEqual([]);
  });

  test('200 handled: an unknown type, even with onAny registered, runs nothing', async () => {
    const { webhooks, store } = setup();
    let calls = 0;
    webhooks.onAny(() => {
      calls++;
    });
    for (const type of ['invoice.created', 'toString', '__proto__', 'constructor', 'user.*']) {
      const response = await deliver(webhooks, { ...createTestEvent('user.created'), type }, { secret });
      expect(response.status, type).toBe(200);
    }
    expect(calls).toBe(0);
    expect(store.calls).toEqual([]);
  });

  test('200 duplicate of a completed event, with x-webhook-duplicate: true', async () => {
    const { webhooks } = setup();
    let calls = 0;
    webhooks.on('user.created', () => {
      calls++;
    });
    const event = createTestEvent('user.created');
    await deliver(webhooks, event, { secret });
    // A retry may differ in fields such as pending_webhooks: the id alone is the identity.
    const retry = await deliver(webhooks, { ...event, pending_webhooks: 0 }, { secret });
    expect(retry.status).toBe(200);
    expect(retry.headers['x-webhook-duplicate']).toBe('true');
    expect(JSON.parse(retry.body)).toEqual({ received: true, duplicate: true });
    expect(calls).toBe(1);
  });

  test('200 when handlers succeeded but the store failed to record completion; onError is told', async () => {
    const { webhooks, errors } = setup({ store: new FaultyStore({ complete: 'reject' }) });
    let calls = 0;
    webhooks.on('user.created', () => {
      calls++;
    });
    const response = await deliver(webhooks, createTestEvent('user.created'), { secret });
    expect(response.status).toBe(200);
    expect(calls).toBe(1);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(StoreUnavailableError);
    expect((errors[0]!.cause as Error).message).toContain('complete failed');
  });

  test('401 missing_signature; the store and handlers untouched', async () => {
    const { webhooks, store } = setup();
    let calls = 0;
    webhooks.onAny(() => {
      calls++;
    });
    const response = await sendRaw(webhooks, JSON.stringify(createTestEvent('user.created')), {});
    expect(response.status).toBe(401);
    expect(errorOf(response).code).toBe('missing_signature');
    expect(calls).toBe(0);
    expect(store.calls).toEqual([]);
  });

  test('401 invalid_signature: malformed value, or no secret matches; the store untouched', async () => {
    const { webhooks, store } = setup();
    const body = JSON.stringify(createTestEvent('user.created'));
    for (const signature of [
      'sha256=abc',
      signPayload(body, 'wrong-secret'),
      signPayload(`${body} `, secret),
    ]) {
      const response = await sendRaw(webhooks, body, { 'x-service-signature': signature });
      expect(response.status).toBe(401);
      expect(errorOf(response).code).toBe('invalid_signature');
    }
    expect(store.calls).toEqual([]);
  });

  test('401 answers echo nothing of the unverified input', async () => {
    const { webhooks } = setup();
    const body = JSON.stringify(createTestEvent('user.created', { id: 'evt_<script>' }));
    const response = await sendRaw(webhooks, body, { 'x-service-signature': 'sha256=<script>' });
    expect(response.body).not.toContain('script');
  });

  const invalidBodies: Record<string, unknown> = {
    'not JSON': '{"id": "evt_1",',
    'a JSON array': '[]',
    'a JSON string': '"evt"',
    'id missing': { ...createTestEvent('user.created'), id: undefined },
    'id empty': { ...createTestEvent('user.created'), id: '' },
    'id of 256 characters': { ...createTestEvent('user.created'), id: 'e'.repeat(256) },
    'id a number': { ...createTestEvent('user.created'), id: 42 },
    'type missing': { ...createTestEvent('user.created'), type: undefined },
    'type a number': { ...createTestEvent('user.created'), type: 7 },
    'created a string': { ...createTestEvent('user.created'), created: '1700000000' },
    'created fractional': {
      ...createTestEvent('user.created'),
      created: Math.floor(Date.now() / 1000) + 0.5,
    },
    'data null': { ...createTestEvent('user.created'), data: null },
    'data an array': { ...createTestEvent('user.created'), data: [] },
    'livemode a string': { ...createTestEvent('user.created'), livemode: 'false' },
    'pending_webhooks a string': { ...createTestEvent('user.created'), pending_webhooks: '1' },
  };
  for (const [label, value] of Object.entries(invalidBodies)) {
    test(`400 invalid_request after a valid signature: ${label}; the store untouched`, async () => {
      const { webhooks, store } = setup();
      let calls = 0;
      webhooks.onAny(() => {
        calls++;
      });
      const body = typeof value === 'string' ? value : JSON.stringify(value);
      const response = await deliver(webhooks, undefined, { secret, body });
      expect(response.status).toBe(400);
      expect(errorOf(response).code).toBe('invalid_request');
      expect(calls).toBe(0);
      expect(store.calls).toEqual([]);
    });
  }

  test('400 event_too_old: signed created older than maxEventAgeSeconds, or > 5 min ahead', async () => {
    const { webhooks, store } = setup({ maxEventAgeSeconds: 600 });
    webhooks.onAny(() => {});
    const now = Math.floor(Date.now() / 1000);
    for (const created of [now - 601, now + 301, 0]) {
      const response = await deliver(webhooks, createTestEvent('user.created', { created }), { secret });
      expect(response.status, String(created - now)).toBe(400);
      expect(errorOf(response).code).toBe('event_too_old');
    }
    expect(store.calls).toEqual([]);
    for (const created of [now - 590, now + 240]) {
      const response = await deliver(webhooks, createTestEvent('user.created', { created }), { secret });
      expect(response.status, String(created - now)).toBe(200);
    }
  });

  test('413 payload_too_large for bytes and strings over maxBodyBytes; nothing verified or stored', async () => {
    const { webhooks, store } = setup({ maxBodyBytes: 2048 });
    const event = createTestEvent('user.created', { data: { name: 'é'.repeat(400) } }); // 800 bytes, 400 chars
    const fits = JSON.stringify(event);
    expect(new TextEncoder().encode(fits).byteLength).toBeLessThanOrEqual(2048);
    expect((await deliver(webhooks, event, { secret })).status).toBe(200);
    const big = JSON.stringify(createTestEvent('user.created', { data: { name: 'é'.repeat(900) } }));
    expect(big.length).toBeLessThan(2048); // only the UTF-8 length is over the limit
    const asString = await deliver(webhooks, undefined, { secret, body: big });
    expect(asString.status).toBe(413);
    expect(errorOf(asString).code).toBe('payload_too_large');
    const asBytes = await deliver(webhooks, undefined, { secret, body: new TextEncoder().encode(big) });
    expect(asBytes.status).toBe(413);
    expect(store.calls.filter((c) => c.startsWith('claim'))).toHaveLength(0);
  });

  test('409 event_in_progress with Retry-After while the same event is being handled', async () => {
    const { webhooks } = setup();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let calls = 0;
    webhooks.on('user.created', async () => {
      calls++;
      await gate;
    });
    const event = createTestEvent('user.created');
    const first = deliver(webhooks, event, { secret });
    await new Promise((resolve) => setTimeout(resolve, 10));
    const second = await deliver(webhooks, event, { secret });
    expect(second.status).toBe(409);
    expect(errorOf(second).code).toBe('event_in_progress');
    expect(second.headers['retry-after']).toBe('45');
    release();
    expect((await first).status).toBe(200);
    expect(calls).toBe(1);
  });

  test('409 resource_busy with Retry-After (the lease left) while another event of the resource is handled (ordering)', async () => {
    const store = new OrderedSpyStore();
    const { webhooks } = setup({ store, ordering: { 'user.*': 'serialize' } });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let calls = 0;
    webhooks.on('user.updated', async () => {
      calls++;
      await gate;
    });
    const data = { object: 'user', id: 'usr_busy' } as never;
    const first = deliver(webhooks, createTestEvent('user.updated', { data }), { secret });
    await new Promise((resolve) => setTimeout(resolve, 10));
    const other = createTestEvent('user.updated', { data });
    const busy = await deliver(webhooks, other, { secret });
    expect(busy.status).toBe(409);
    expect(errorOf(busy).code).toBe('resource_busy');
    expect(Number(busy.headers['retry-after'])).toBeGreaterThan(40);
    expect(Number(busy.headers['retry-after'])).toBeLessThanOrEqual(45);
    // The event itself was given back with the resource's answer: its retry runs it.
    const resource = `${namespace}:user:usr_busy`;
    const otherKey = `${resource}\u001f${other.id}`;
    expect(store.calls.slice(-3)).toEqual([
      `claim ${otherKey}`,
      `claimResource ${resource}`,
      `release ${otherKey}`,
    ]);
    release();
    expect((await first).status).toBe(200);
    expect(calls).toBe(1);
  });

  test("200 stale with x-webhook-stale: an event older than its resource's newest handled is recorded, never run (ordering latest); three store calls", async () => {
    const store = new OrderedSpyStore();
    const { webhooks } = setup({ store, ordering: { 'user.*': 'latest' } });
    let calls = 0;
    webhooks.on('user.updated', () => {
      calls++;
    });
    const data = { object: 'user', id: 'usr_stale' } as never;
    const created = Math.floor(Date.now() / 1000);
    const newer = createTestEvent('user.updated', { data, created });
    expect((await deliver(webhooks, newer, { secret })).status).toBe(200);
    const older = createTestEvent('user.updated', { data, created: created - 5 });
    const stale = await deliver(webhooks, older, { secret });
    expect(stale.status).toBe(200);
    expect(stale.headers['x-webhook-stale']).toBe('true');
    expect(JSON.parse(stale.body)).toEqual({ received: true, stale: true });
    expect(calls).toBe(1);
    const resource = `${namespace}:user:usr_stale`;
    const key = (event: { id: string }) => `${resource}\u001f${event.id}`;
    // A guarded delivery is three round trips whether it runs or is stale.
    expect(store.calls).toEqual([
      `claim ${key(newer)}`,
      `claimResource ${resource}`,
      `completeOrdered ${key(newer)} ${resource} ${created * 2 + 1}`,
      `claim ${key(older)}`,
      `claimResource ${resource}`,
      `completeOrdered ${key(older)} ${resource} ${(created - 5) * 2 + 1}`,
    ]);
  });

  test('500 handler_failed, nothing of the error leaked; the retry is processed and completes', async () => {
    const { webhooks, store, errors } = setup();
    let calls = 0;
    webhooks.on('payment.failed', () => {
      calls++;
      if (calls === 1) throw new Error('connect ECONNREFUSED db.internal:5432 password=hunter2');
    });
    const event = createTestEvent('payment.failed');
    const failed = await deliver(webhooks, event, { secret });
    expect(failed.status).toBe(500);
    expect(errorOf(failed).code).toBe('handler_failed');
    expect(failed.body).not.toMatch(/hunter2|ECONNREFUSED|db\.internal/);
    expect(errors[0]).toBeInstanceOf(HandlerFailedError);
    expect((errors[0]!.cause as Error).message).toContain('ECONNREFUSED');
    expect(store.calls).toEqual([`claim ${key(event.id)}`, `release ${key(event.id)}`]);

    const retry = await deliver(webhooks, event, { secret });
    expect(retry.status).toBe(200);
    expect(calls).toBe(2);
    const third = await deliver(webhooks, event, { secret });
    expect(third.headers['x-webhook-duplicate']).toBe('true');
    expect(calls).toBe(2);
  });

  test('500 handler_failed even when the release fails too; onError hears both', async () => {
    const { webhooks, errors } = setup({ store: new FaultyStore({ release: 'reject' }) });
    webhooks.on('user.created', () => {
      throw new Error('boom');
    });
    const response = await deliver(webhooks, createTestEvent('user.created'), { secret });
    expect(response.status).toBe(500);
    expect(errors.map((e) => e.code)).toEqual(['handler_failed', 'store_unavailable']);
  });

  test("503 rate_limited with Retry-After (the downstream's wait, rounded up to seconds) when a handler throws RateLimitedError; the claim is released and the retry runs", async () => {
    const { webhooks, store, errors } = setup();
    let calls = 0;
    webhooks.on('payment.succeeded', () => {
      calls++;
      if (calls === 1) throw new RateLimitedError(12_300);
      // Wrapped once more by the handler's own client: still the downstream's wait.
      if (calls === 2) throw new Error('crm.example refused', { cause: new RateLimitedError(2_000) });
    });
    const event = createTestEvent('payment.succeeded');
    const limited = await deliver(webhooks, event, { secret });
    expect(limited.status).toBe(503);
    expect(errorOf(limited)).toEqual({
      code: 'rate_limited',
      message: 'A service the receiver calls is rate limiting it, so the event was not handled; retry later.',
    });
    expect(limited.headers['retry-after']).toBe('13');
    expect(store.calls).toEqual([`claim ${key(event.id)}`, `release ${key(event.id)}`]);
    // onError hears what it hears of any handler failure: the handler's error is the cause.
    expect(errors[0]).toBeInstanceOf(HandlerFailedError);
    expect(errors[0]!.cause).toBeInstanceOf(RateLimitedError);

    const wrapped = await deliver(webhooks, event, { secret });
    expect([wrapped.status, errorOf(wrapped).code, wrapped.headers['retry-after']]).toEqual([
      503,
      'rate_limited',
      '2',
    ]);
    const retry = await deliver(webhooks, event, { secret });
    expect(retry.status).toBe(200);
    expect(retry.headers['x-webhook-duplicate']).toBeUndefined();
    expect(calls).toBe(3);
  });

  test('503 handler_timeout with Retry-After; ctx.signal aborts; the claim is held until the handler settles', async () => {
    const { webhooks, store, errors } = setup({ handlerTimeoutMs: 50 });
    let finish!: () => void;
    const done = new Promise<void>((resolve) => {
      finish = resolve;
    });
    let signal: AbortSignal | undefined;
    let calls = 0;
    webhooks.on('project.created', async (_event, ctx) => {
      calls++;
      signal = ctx.signal;
      await done; // a handler that ignores the signal and finishes late
    });
    const event = createTestEvent('project.created');
    const response = await deliver(webhooks, event, { secret });
    expect(response.status).toBe(503);
    expect(errorOf(response).code).toBe('handler_timeout');
    expect(response.headers['retry-after']).toBe('60');
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBeInstanceOf(HandlerTimeoutError);
    expect(errors[0]).toBeInstanceOf(HandlerTimeoutError);

    expect((await deliver(webhooks, event, { secret })).status).toBe(409);
    finish();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(store.calls.at(-1)).toBe(`complete ${key(event.id)}`);
    const retry = await deliver(webhooks, event, { secret });
    expect(retry.status).toBe(200);
    expect(retry.headers['x-webhook-duplicate']).toBe('true');
    expect(calls).toBe(1);
  });

  test('503 handler_timeout, then a late failure releases the claim so the retry runs', async () => {
    const { webhooks, store } = setup({ handlerTimeoutMs: 30 });
    let calls = 0;
    webhooks.on('project.deleted', async () => {
      calls++;
      if (calls === 1) {
        await new Promise((resolve) => setTimeout(resolve, 60));
        throw new Error('late failure');
      }
    });
    const event = createTestEvent('project.deleted');
    expect((await deliver(webhooks, event, { secret })).status).toBe(503);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(store.calls.at(-1)).toBe(`release ${key(event.id)}`);
    expect((await deliver(webhooks, event, { secret })).status).toBe(200);
    expect(calls).toBe(2);
  });

  for (const fault of ['reject', 'hang'] as const) {
    test(`503 store_unavailable with Retry-After when the claim ${fault === 'reject' ? 'fails' : 'hangs past storeTimeoutMs'}; handler not run`, async () => {
      const { webhooks, errors, store } = setup({
        store: new FaultyStore({ claim: fault }),
        storeTimeoutMs: 100,
      });
      let calls = 0;
      webhooks.onAny(() => {
        calls++;
      });
      const started = performance.now();
      const response = await deliver(webhooks, createTestEvent('user.updated'), { secret });
      const took = performance.now() - started;
      expect(response.status).toBe(503);
      expect(errorOf(response).code).toBe('store_unavailable');
      expect(response.headers['retry-after']).toBe('60');
      expect(calls).toBe(0);
      expect(errors[0]).toBeInstanceOf(StoreUnavailableError);
      // Correctness bound, not a speed claim: the deadline is what ended the wait.
      if (fault === 'hang') expect(took).toBeGreaterThanOrEqual(95);
      // The claim may still land late: the core releases it with the same token, unawaited.
      expect(store.calls.at(-1)).toMatch(/^release /);
    });
  }

  test("onStoreError: 'process' runs the handlers without deduplication when the store is down", async () => {
    const { webhooks, errors } = setup({
      store: new FaultyStore({ claim: 'reject' }),
      onStoreError: 'process',
    });
    let calls = 0;
    webhooks.on('user.created', () => {
      calls++;
    });
    const response = await deliver(webhooks, createTestEvent('user.created'), { secret });
    expect(response.status).toBe(200);
    expect(calls).toBe(1);
    expect(errors[0]?.code).toBe('store_unavailable');
  });

  test('405 method_not_allowed when the adapter passes another method than POST', async () => {
    const { webhooks, store } = setup();
    for (const method of ['GET', 'PUT', 'head']) {
      const response = await webhooks.handle({ body: '', headers: {}, method });
      expect(response.status).toBe(405);
      expect(errorOf(response).code).toBe('method_not_allowed');
    }
    expect((await webhooks.handle({ body: '{}', headers: {}, method: 'post' })).status).toBe(401);
    expect(store.calls).toEqual([]);
  });

  test('404 unknown_tenant, with `tenant`, when the secret function knows no such tenant: nothing stored, nothing run', async () => {
    const store = new SpyStore();
    const errors: WebhookError[] = [];
    let runs = 0;
    const webhooks = createWebhooks({
      store,
      tenant: { from: { header: 'x-account' }, secret: () => undefined },
    });
    webhooks.on('user.created', () => {
      runs++;
    });
    webhooks.onError((error) => errors.push(error));
    const body = JSON.stringify(createTestEvent('user.created'));
    const response = await webhooks.handle({
      body,
      headers: { 'x-service-signature': signPayload(body, secret), 'x-account': 'nobody' },
    });
    expect(response.status).toBe(404);
    expect(errorOf(response)).toEqual({
      code: 'unknown_tenant',
      message: 'This receiver serves no webhook registration at this address.',
    });
    expect(response.headers['retry-after']).toBeUndefined();
    expect([store.calls, runs, errors.map((error) => error.code)]).toEqual([[], 0, ['unknown_tenant']]);
  });

  test('200, and onError hears LeaseLostError, when another delivery took over an expired claim', async () => {
    const store = new SpyStore();
    // The claim's lease ran out mid-handler and another delivery owns the event now.
    store.complete = async () => 'lost';
    const { webhooks, errors } = setup({ store });
    webhooks.on('user.created', () => {});
    const response = await deliver(webhooks, createTestEvent('user.created'), { secret });
    expect(response.status).toBe(200);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(LeaseLostError);
  });
});
