/**
 * Issue 31: one span per delivery with the real OpenTelemetry SDK (in-memory exporter, on-demand metric
 * reader, AsyncLocalStorage context manager), driven through `handle()`: parentage, the attributes of
 * each outcome (none from unverified input), the handler's own error on a failure, the late end of
 * a timed-out run, the metric counts, and the log record's trace ids.
 */
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import {
  createWebhooks,
  type DeliveryRecord,
  type IdempotencyStore,
  MemoryStore,
  PayloadTooLargeError,
  type WebhooksOptions,
} from 'service-webhooks';
import { openTelemetry } from 'service-webhooks/opentelemetry';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { type OpenTelemetryHarness, startOpenTelemetry } from '../support/opentelemetry.js';
import { sleep } from '../support/sleep.js';

const secret = 'whsec_telemetry';
let otel: OpenTelemetryHarness;

beforeEach(() => {
  otel = startOpenTelemetry();
});
afterEach(async () => {
  await otel.shutdown();
});

function receiver(options: { handlerTimeoutMs?: number; ordering?: WebhooksOptions['ordering'] } = {}) {
  const { tracerProvider, meterProvider } = otel;
  return createWebhooks({
    secret,
    store: new MemoryStore(),
    telemetry: openTelemetry({ tracerProvider, meterProvider }),
    ...options,
  });
}

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

describe('a delivery is one span', () => {
  test('a child of the active span, with the handlers (and what they trace) inside it', async () => {
    const tracer = otel.tracerProvider.getTracer('test');
    let handlerSawDelivery = false;
    const webhooks = receiver().on('user.created', async () => {
      handlerSawDelivery = trace.getActiveSpan() !== undefined;
      await sleep(1);
      tracer.startSpan('send welcome mail').end();
    });
    const event = createTestEvent('user.created');
    const outer = tracer.startSpan('POST /webhooks', { kind: SpanKind.SERVER });
    const response = await context.with(trace.setSpan(context.active(), outer), () =>
      deliver(webhooks, event, { secret }),
    );
    outer.end();
    expect(response.status).toBe(200);
    const delivery = otel.span('webhook.delivery');
    const mail = otel.span('send welcome mail');
    expect(handlerSawDelivery).toBe(true);
    expect(parentOf(delivery)).toBe(outer.spanContext().spanId);
    expect(parentOf(mail)).toBe(delivery.spanContext().spanId);
    expect(mail.spanContext().traceId).toBe(outer.spanContext().traceId);
    expect(delivery.attributes).toMatchObject({
      'webhook.event.id': event.id,
      'webhook.event.type': 'user.created',
      'webhook.outcome': 'handled',
      'webhook.secret.index': 0,
      'http.response.status_code': 200,
    });
    expect(delivery.attributes['error.type']).toBeUndefined();
    expect(delivery.status.code).toBe(SpanStatusCode.UNSET);
  });

  test("a store's claim and completion are child spans of the delivery, and a driver's span is the step's child", async () => {
    const tracer = otel.tracerProvider.getTracer('test');
    const memory = new MemoryStore();
    // A store of promises, as Redis or PostgreSQL is, whose "driver" traces its round trip.
    const remote: IdempotencyStore = {
      claim: async (...args) => {
        tracer.startSpan('driver: claim').end();
        return memory.claim(...args);
      },
      complete: async (...args) => memory.complete(...args),
      release: async (...args) => memory.release(...args),
    };
    const { tracerProvider, meterProvider } = otel;
    const webhooks = createWebhooks({
      secret,
      store: remote,
      telemetry: openTelemetry({ tracerProvider, meterProvider }),
    }).on('user.created', () => {});
    await deliver(webhooks, createTestEvent('user.created'), { secret });
    const delivery = otel.span('webhook.delivery');
    const claim = otel.span('webhook.store.claim');
    expect(parentOf(claim)).toBe(delivery.spanContext().spanId);
    expect(parentOf(otel.span('webhook.store.complete'))).toBe(delivery.spanContext().spanId);
    expect(parentOf(otel.span('driver: claim'))).toBe(claim.spanContext().spanId);
  });

  test('the memory store, which answers at once, adds no step spans', async () => {
    const webhooks = receiver().on('user.created', () => {});
    await deliver(webhooks, createTestEvent('user.created'), { secret });
    expect(otel.spans().map((span) => span.name)).toEqual(['webhook.delivery']);
  });

  test('a duplicate says so, and makes no completion', async () => {
    const webhooks = receiver().on('user.created', () => {});
    const event = createTestEvent('user.created');
    await deliver(webhooks, event, { secret });
    otel.exporter.reset();
    const again = await deliver(webhooks, event, { secret });
    expect(again.status).toBe(200);
    expect(otel.span('webhook.delivery').attributes['webhook.outcome']).toBe('duplicate');
    expect(otel.spans().map((span) => span.name)).not.toContain('webhook.store.complete');
  });

  test('a stale event (ordering latest) is its own outcome on the span and in the deliveries count', async () => {
    const webhooks = receiver({ ordering: { 'user.*': 'latest' } }).on('user.updated', () => {});
    const data = { object: 'user', id: 'usr_otel' } as never;
    const created = Math.floor(Date.now() / 1000);
    await deliver(webhooks, createTestEvent('user.updated', { data, created }), { secret });
    otel.exporter.reset();
    const stale = await deliver(webhooks, createTestEvent('user.updated', { data, created: created - 9 }), {
      secret,
    });
    expect(stale.headers['x-webhook-stale']).toBe('true');
    expect(otel.span('webhook.delivery').attributes['webhook.outcome']).toBe('stale');
    await otel.collect();
    expect(otel.count('webhook.deliveries', { 'webhook.outcome': 'stale' })).toBe(1);
  });

  test('a forged delivery is rejected with no event id or type from its unverified body, and no ERROR', async () => {
    const webhooks = receiver().on('user.created', () => {});
    const event = createTestEvent('user.created');
    const response = await deliver(webhooks, event, { secret: 'whsec_someone_else' });
    expect(response.status).toBe(401);
    const delivery = otel.span('webhook.delivery');
    expect(delivery.attributes).toMatchObject({
      'webhook.outcome': 'rejected',
      'http.response.status_code': 401,
      'error.type': 'invalid_signature',
    });
    const said = JSON.stringify(delivery.attributes);
    expect(said).not.toContain(event.id);
    expect(said).not.toContain('user.created');
    expect(delivery.status.code).toBe(SpanStatusCode.UNSET);
  });

  test("a handler's failure is an ERROR span that records the handler's own error, stack and all", async () => {
    const webhooks = receiver().on('payment.failed', () => {
      throw new RangeError('ledger is closed');
    });
    webhooks.onError(() => {});
    const response = await deliver(webhooks, createTestEvent('payment.failed'), { secret });
    expect(response.status).toBe(500);
    const delivery = otel.span('webhook.delivery');
    expect(delivery.status).toEqual({ code: SpanStatusCode.ERROR, message: 'handler_failed' });
    expect(delivery.attributes).toMatchObject({
      'webhook.outcome': 'failed',
      'error.type': 'handler_failed',
    });
    const [exception] = delivery.events.filter((e) => e.name === 'exception');
    expect(exception?.attributes).toMatchObject({
      'exception.type': 'RangeError',
      'exception.message': 'ledger is closed',
    });
    expect(String(exception?.attributes?.['exception.stacktrace'])).toContain('delivery-spans.test.ts');
  });

  test('a run that outlives its answer ends its span when the handlers end, not at the 503', async () => {
    const tracer = otel.tracerProvider.getTracer('test');
    let finish!: () => void;
    const webhooks = receiver({ handlerTimeoutMs: 20 }).on('user.created', async () => {
      await new Promise<void>((resolve) => {
        finish = resolve;
      });
      tracer.startSpan('late work').end();
    });
    webhooks.onError(() => {});
    const response = await deliver(webhooks, createTestEvent('user.created'), { secret });
    expect(response.status).toBe(503);
    expect(otel.spans().map((span) => span.name)).not.toContain('webhook.delivery');
    finish();
    await sleep(20);
    const delivery = otel.span('webhook.delivery');
    expect(delivery.attributes).toMatchObject({
      'http.response.status_code': 503,
      'error.type': 'handler_timeout',
      'webhook.late': true,
    });
    expect(delivery.events.find((e) => e.name === 'webhook.handlers.settled')?.attributes).toEqual({
      'webhook.outcome': 'handled',
    });
    expect(parentOf(otel.span('late work'))).toBe(delivery.spanContext().spanId);
  });

  test('an answer given before handle() (a wrong method, a body too large) is a span and a count too', async () => {
    const webhooks = receiver();
    const tooLarge = webhooks.reject(new PayloadTooLargeError());
    expect(tooLarge.status).toBe(413);
    const wrongMethod = await webhooks.handle({ method: 'GET', body: '', headers: {} });
    expect(wrongMethod.status).toBe(405);
    expect(otel.spans().map((span) => span.attributes['error.type'])).toEqual([
      'payload_too_large',
      'method_not_allowed',
    ]);
    await otel.collect();
    expect(otel.count('webhook.deliveries', { 'webhook.outcome': 'rejected' })).toBe(2);
  });
});

describe('metrics', () => {
  test('deliveries are counted by outcome, with bounded attributes and no event ids', async () => {
    const webhooks = receiver().on('user.created', () => {});
    webhooks.onError(() => {});
    const sent = [
      createTestEvent('user.created'),
      createTestEvent('user.created'),
      createTestEvent('user.updated'),
    ];
    for (const event of sent) await deliver(webhooks, event, { secret });
    await deliver(webhooks, sent[0]!, { secret });
    await deliver(webhooks, createTestEvent('user.created'), { secret: 'whsec_wrong' });
    const unknownType = { ...createTestEvent('user.created'), type: 'invoice.paid' };
    await deliver(webhooks, unknownType as never, { secret });
    await otel.collect();
    expect(otel.count('webhook.deliveries')).toBe(6);
    expect(otel.count('webhook.deliveries', { 'webhook.outcome': 'handled' })).toBe(4);
    expect(otel.count('webhook.deliveries', { 'webhook.outcome': 'duplicate' })).toBe(1);
    expect(
      otel.count('webhook.deliveries', { 'webhook.outcome': 'rejected', 'error.type': 'invalid_signature' }),
    ).toBe(1);
    expect(otel.count('webhook.deliveries', { 'webhook.event.type': 'unknown' })).toBe(1);
    const attributeValues = otel
      .points('webhook.deliveries')
      .flatMap((point) => Object.values(point.attributes));
    for (const event of sent) expect(attributeValues).not.toContain(event.id);
    const durations = otel.points('webhook.delivery.duration');
    expect(durations.reduce((n, point) => n + (point.value as { count: number }).count, 0)).toBe(6);
    // Only the two user.created deliveries that ran had handlers to time (the duplicate ran none).
    const handlerRuns = otel.points('webhook.handler.duration');
    expect(handlerRuns.reduce((n, point) => n + (point.value as { count: number }).count, 0)).toBe(2);
  });
});

describe('a lost lease', () => {
  test('is counted in webhook.lease.lost and marked on the span', async () => {
    const memory = new MemoryStore();
    // Another attempt took the event over while the handlers ran: the completion finds the claim gone.
    const takenOver: IdempotencyStore = {
      claim: async (...args) => memory.claim(...args),
      complete: async () => 'lost',
      release: async (...args) => memory.release(...args),
    };
    const { tracerProvider, meterProvider } = otel;
    const webhooks = createWebhooks({
      secret,
      store: takenOver,
      telemetry: openTelemetry({ tracerProvider, meterProvider }),
    }).on('user.created', () => {});
    webhooks.onError(() => {});
    expect((await deliver(webhooks, createTestEvent('user.created'), { secret })).status).toBe(200);
    expect(otel.span('webhook.delivery').events.map((event) => event.name)).toContain('webhook.lease.lost');
    await otel.collect();
    expect(otel.count('webhook.lease.lost', { 'webhook.event.type': 'user.created' })).toBe(1);
  });
});

describe('logs join their trace', () => {
  test('the log record of a delivery carries its trace_id and span_id', async () => {
    const records: DeliveryRecord[] = [];
    const { tracerProvider, meterProvider } = otel;
    const log = (record: DeliveryRecord) => void records.push(record);
    const webhooks = createWebhooks({
      secret,
      store: new MemoryStore(),
      logger: { info: log, warn: log, error: log },
      telemetry: openTelemetry({ tracerProvider, meterProvider }),
    }).on('user.created', () => {});
    await deliver(webhooks, createTestEvent('user.created'), { secret });
    const delivery = otel.span('webhook.delivery');
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      trace_id: delivery.spanContext().traceId,
      span_id: delivery.spanContext().spanId,
    });
  });
});

describe('without an SDK (the API alone)', () => {
  test('deliveries are answered as ever and nothing is recorded', async () => {
    await otel.shutdown();
    const webhooks = createWebhooks({ secret, store: new MemoryStore(), telemetry: openTelemetry() }).on(
      'user.created',
      () => {},
    );
    const response = await deliver(webhooks, createTestEvent('user.created'), { secret });
    expect(response.status).toBe(200);
    expect(otel.spans()).toHaveLength(0);
    otel = startOpenTelemetry();
  });
});

describe('the global providers', () => {
  test('an SDK registered after openTelemetry() but before the first delivery records it', async () => {
    await otel.shutdown();
    const telemetry = openTelemetry();
    const webhooks = createWebhooks({ secret, store: new MemoryStore(), telemetry }).on(
      'user.created',
      () => {},
    );
    otel = startOpenTelemetry({ register: true });
    await deliver(webhooks, createTestEvent('user.created'), { secret });
    expect(otel.span('webhook.delivery').attributes['webhook.outcome']).toBe('handled');
    await otel.collect();
    expect(otel.count('webhook.deliveries', { 'webhook.outcome': 'handled' })).toBe(1);
  });
});
