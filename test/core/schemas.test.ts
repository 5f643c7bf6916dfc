/**
 * Issue 34: Standard Schemas per event type, with real zod 4, valibot 1 and arktype 2 schemas and the
 * first-party ones, through `handle()`: the handler gets the schema's output (transforms included); a
 * signed event that fails its schema is never handled nor acknowledged (500 `event_schema_mismatch`,
 * an EventSchemaError with the issues to onError, no claim so a fixed schema handles the retry);
 * async schemas work and synchronous ones keep the delivery synchronous; a worker's run refuses it.
 */
import { type } from 'arktype';
import {
  answerNow,
  createWebhooks,
  EventSchemaError,
  type EventSchemas,
  type InboxEntry,
  MemoryStore,
  type WebhookError,
} from 'service-webhooks';
import { eventSchemas } from 'service-webhooks/schemas';
import { createTestEvent, deliver, signPayload } from 'service-webhooks/testing';
import * as v from 'valibot';
import { describe, expect, test } from 'vitest';
import { z } from 'zod';
import { EVENT_TYPES } from '../../src/event-types.js';
import { sealed } from '../support/sealed-entry.js';

const secret = 'whsec_schemas';

const zodPayment = z
  .object({
    data: z.object({ object: z.literal('payment'), id: z.string(), amount: z.number().int().positive() }),
  })
  .loose()
  .transform((event) => ({ ...event, cents: BigInt(event.data.amount) }));

function payment(amount: unknown) {
  return createTestEvent('payment.succeeded', { data: { amount } as never });
}

function receiver<Schemas extends EventSchemas>(schemas: Schemas, store = new MemoryStore()) {
  const errors: WebhookError[] = [];
  const webhooks = createWebhooks({ secret, store, schemas });
  webhooks.onError((error) => {
    errors.push(error);
  });
  return { webhooks, errors, store };
}

describe('a schema per event type', () => {
  test("zod: the handler receives the schema's output, transform included", async () => {
    const { webhooks } = receiver({ 'payment.succeeded': zodPayment });
    const seen: unknown[] = [];
    webhooks.on('payment.succeeded', (event) => {
      seen.push(event.cents);
    });
    const response = await deliver(webhooks, payment(1200), { secret });
    expect(response.status).toBe(200);
    expect(seen).toEqual([1200n]);
  });

  for (const [library, schema] of [
    ['zod', zodPayment],
    [
      'valibot',
      v.looseObject({
        data: v.looseObject({
          object: v.literal('payment'),
          id: v.string(),
          amount: v.pipe(v.number(), v.integer(), v.minValue(1)),
        }),
      }),
    ],
    ['arktype', type({ data: { object: "'payment'", id: 'string', amount: 'number.integer > 0' } })],
  ] as const) {
    test(`${library}: a signed event that fails is answered 500 event_schema_mismatch, reported, never handled nor claimed`, async () => {
      const store = new MemoryStore();
      const { webhooks, errors } = receiver({ 'payment.succeeded': schema }, store);
      let ran = 0;
      webhooks.on('payment.succeeded', () => {
        ran++;
      });
      const event = payment('12.00 EUR');
      const response = await deliver(webhooks, event, { secret });
      expect(response.status).toBe(500);
      const body = JSON.parse(response.body) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('event_schema_mismatch');
      // Nothing of the body or the issues goes back to the sender.
      expect(response.body).not.toContain('amount');
      expect(ran).toBe(0);
      expect(errors).toHaveLength(1);
      const error = errors[0] as EventSchemaError;
      expect(error).toBeInstanceOf(EventSchemaError);
      expect(error).toMatchObject({
        code: 'event_schema_mismatch',
        eventType: 'payment.succeeded',
        eventId: event.id,
      });
      // Each library says where as it does (arktype may go one step deeper); all point at data.amount.
      expect(error.issues.length).toBeGreaterThan(0);
      for (const issue of error.issues) expect(issue.path.slice(0, 2)).toEqual(['data', 'amount']);
      expect(error.message).toContain('data.amount');
      // No claim was made: a receiver whose schema was fixed, on the same store, handles the retry.
      const fixed = createWebhooks({ secret, store }).on('payment.succeeded', () => {
        ran++;
      });
      expect((await deliver(fixed, event, { secret })).status).toBe(200);
      expect(ran).toBe(1);
    });
  }

  test('types without a schema are handled as before', async () => {
    const { webhooks } = receiver({ 'payment.succeeded': zodPayment });
    let ran = 0;
    webhooks.on('user.created', () => {
      ran++;
    });
    expect((await deliver(webhooks, createTestEvent('user.created'), { secret })).status).toBe(200);
    expect(ran).toBe(1);
  });

  test('an async schema works; a synchronous one keeps the delivery synchronous', async () => {
    const asyncSchema = v.pipeAsync(
      v.looseObject({ data: v.looseObject({ amount: v.number() }) }),
      v.checkAsync(async (event) => event.data.amount < 10_000, 'over the limit'),
    );
    const slow = receiver({ 'payment.succeeded': asyncSchema });
    slow.webhooks.on('payment.succeeded', () => {});
    expect((await deliver(slow.webhooks, payment(5), { secret })).status).toBe(200);
    expect((await deliver(slow.webhooks, payment(50_000), { secret })).status).toBe(500);
    expect((slow.errors[0] as EventSchemaError).issues[0]?.message).toBe('over the limit');

    const fast = receiver({ 'payment.succeeded': eventSchemas['payment.succeeded'] });
    fast.webhooks.on('payment.succeeded', () => {});
    const body = JSON.stringify(payment(5));
    const answer = answerNow(fast.webhooks, {
      body,
      headers: { 'x-service-signature': signPayload(body, secret) },
    });
    expect(answer).not.toBeInstanceOf(Promise);
    expect((answer as { status: number }).status).toBe(200);
  });

  test('a schema that throws is a failure with the throw as its cause, not a crash', async () => {
    const broken = {
      '~standard': {
        version: 1 as const,
        vendor: 'broken',
        validate: () => {
          throw new RangeError('schema bug');
        },
      },
    };
    const { webhooks, errors } = receiver({ 'user.created': broken });
    webhooks.on('user.created', () => {});
    expect((await deliver(webhooks, createTestEvent('user.created'), { secret })).status).toBe(500);
    expect(errors[0]).toBeInstanceOf(EventSchemaError);
    expect((errors[0] as EventSchemaError).cause).toBeInstanceOf(RangeError);
  });

  test('verifyAndParse applies the schema too', async () => {
    const { webhooks } = receiver({ 'payment.succeeded': zodPayment });
    const good = JSON.stringify(payment(7));
    const parsed = (await webhooks.verifyAndParse(good, signPayload(good, secret))) as unknown as {
      cents: bigint;
    };
    expect(parsed.cents).toBe(7n);
    const bad = JSON.stringify(payment(-1));
    await expect(webhooks.verifyAndParse(bad, signPayload(bad, secret))).rejects.toBeInstanceOf(
      EventSchemaError,
    );
  });

  test('a worker run of an entry that fails its schema rejects with EventSchemaError and runs nothing', async () => {
    const { webhooks, errors } = receiver({ 'payment.succeeded': zodPayment });
    let ran = 0;
    webhooks.on('payment.succeeded', () => {
      ran++;
    });
    const entry: InboxEntry = await sealed(
      { event: payment(0), receivedAt: Date.now(), secretIndex: 0 },
      secret,
    );
    await expect(webhooks.process(entry)).rejects.toBeInstanceOf(EventSchemaError);
    expect(ran).toBe(0);
    expect(errors[0]).toBeInstanceOf(EventSchemaError);
    expect(await webhooks.process(await sealed({ ...entry, event: payment(3) }, secret))).toBe('handled');
    expect(ran).toBe(1);
  });

  test('refuses what is not a schema map at construction', () => {
    expect(() => createWebhooks({ secret, schemas: { 'payment.*': zodPayment } as never })).toThrow(
      /no wildcards/,
    );
    expect(() => createWebhooks({ secret, schemas: { 'user.created': { parse() {} } } as never })).toThrow(
      /not a Standard Schema/,
    );
    expect(() => createWebhooks({ secret, schemas: [] as never })).toThrow(/must be an object/);
  });
});

describe('the first-party schemas (service-webhooks/schemas)', () => {
  test('every documented event the testing kit makes passes its type schema', async () => {
    for (const eventType of EVENT_TYPES) {
      const result = await eventSchemas[eventType]['~standard'].validate(createTestEvent(eventType));
      expect(result.issues, eventType).toBeUndefined();
    }
  });

  test('they check the envelope and the documented fields, say where, and let unknown fields through', async () => {
    const validate = eventSchemas['user.created']['~standard'].validate;
    const event = createTestEvent('user.created');
    const extra = { ...event, data: { ...event.data, plan: 'pro' }, api_version: '2026-01' };
    expect(await validate(extra)).toEqual({ value: extra });
    const broken = {
      ...event,
      type: 'user.updated',
      created: '1700000000',
      livemode: 'false',
      request: { id: 42 },
      data: { ...event.data, object: 'project', email: 'not an address', name: undefined },
    };
    const result = await validate(broken);
    expect(result.issues?.map((issue) => issue.path)).toEqual([
      ['type'],
      ['created'],
      ['livemode'],
      ['request', 'id'],
      ['data', 'object'],
      ['data', 'name'],
      ['data', 'email'],
    ]);
    expect((await validate([])).issues?.[0]?.message).toMatch(/must be an object/);
  });

  test('on a receiver, a delivery missing a documented field is refused with that path', async () => {
    const { webhooks, errors } = receiver(eventSchemas);
    webhooks.on('user.created', () => {});
    const event = createTestEvent('user.created');
    const { email: _dropped, ...data } = event.data;
    const response = await deliver(webhooks, { ...event, data } as never, { secret });
    expect(response.status).toBe(500);
    expect((errors[0] as EventSchemaError).issues).toEqual([
      { path: ['data', 'email'], message: 'must be an e-mail address' },
    ]);
  });
});
