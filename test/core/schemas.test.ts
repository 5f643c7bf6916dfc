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
  SchemaTimeoutError,
  STATUS_TABLE,
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

/** A schema of `vendor` whose `validate` is the given function. */
function schemaOf(validate: (value: unknown) => unknown) {
  return {
    '~standard': {
      version: 1 as const,
      vendor: 'test',
      validate: validate as (value: unknown) => { value: unknown },
    },
  };
}

/** The answer to `pending`, or 'no answer' once `ms` passed: a hang fails an assertion, not the run. */
function within<T>(pending: Promise<T>, ms: number): Promise<T | 'no answer'> {
  return Promise.race([
    pending,
    new Promise<'no answer'>((resolve) => setTimeout(() => resolve('no answer'), ms).unref()),
  ]);
}

describe('issue 45: a schema that never settles', () => {
  test('in the request: 503 schema_timeout with Retry-After within storeTimeoutMs, reported once; the next delivery asks again', async () => {
    // Before the deadline, the delivery waited on the schema forever: no answer, no report.
    let hang = true;
    const checked: string[] = [];
    const hanging = schemaOf((value) => {
      checked.push((value as { id: string }).id);
      return hang ? new Promise(() => {}) : Promise.resolve({ value });
    });
    const errors: WebhookError[] = [];
    const webhooks = createWebhooks({ secret, schemas: { 'user.created': hanging }, storeTimeoutMs: 50 });
    webhooks.onError((error) => {
      errors.push(error);
    });
    let runs = 0;
    webhooks.on('user.created', () => {
      runs++;
    });
    const event = createTestEvent('user.created');
    const started = performance.now();
    const refused = await within(deliver(webhooks, event, { secret }), 5_000);
    expect(refused).not.toBe('no answer');
    expect(performance.now() - started).toBeLessThan(2_000);
    const answer = refused as Exclude<typeof refused, 'no answer'>;
    expect(answer.status).toBe(503);
    expect(answer.headers['retry-after']).toBe('60');
    expect(JSON.parse(answer.body).error).toEqual({
      code: 'schema_timeout',
      message: STATUS_TABLE.schema_timeout.message,
    });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(SchemaTimeoutError);
    // Not a mismatch: an inbox engine must retry it, not dead-letter it.
    expect(errors[0]).not.toBeInstanceOf(EventSchemaError);
    expect(errors[0]).toMatchObject({ code: 'schema_timeout', eventType: 'user.created', eventId: event.id });
    expect(errors[0]!.message).toMatch(/within 50 ms/);
    expect(runs).toBe(0);

    // Nothing was claimed: once the schema answers again, the sender's retry is handled.
    hang = false;
    expect((await deliver(webhooks, event, { secret })).status).toBe(200);
    expect(runs).toBe(1);
    expect(checked).toEqual([event.id, event.id]);
    expect(errors).toHaveLength(1);
  });

  test("in a worker's process(): rejects with SchemaTimeoutError (an ordinary failed attempt), reported once", async () => {
    const webhooks = createWebhooks({
      secret,
      schemas: { 'user.created': schemaOf(() => new Promise(() => {})) },
      storeTimeoutMs: 50,
    });
    const errors: WebhookError[] = [];
    webhooks.onError((error) => {
      errors.push(error);
    });
    let runs = 0;
    webhooks.on('user.created', () => {
      runs++;
    });
    const entry: InboxEntry = await sealed(
      { event: createTestEvent('user.created'), receivedAt: Date.now(), secretIndex: 0 },
      secret,
    );
    const outcome = await within(
      webhooks.process(entry, { handlerTimeoutMs: 60_000 }).then(
        (result) => ({ result }),
        (error: unknown) => ({ error }),
      ),
      5_000,
    );
    expect(outcome).not.toBe('no answer');
    const { error } = outcome as { error?: unknown };
    expect(error).toBeInstanceOf(SchemaTimeoutError);
    expect(error).not.toBeInstanceOf(EventSchemaError);
    expect(errors).toEqual([error]);
    expect(runs).toBe(0);
  });

  test('a synchronous schema arms no deadline: the answer comes back without a promise', () => {
    // A deadline per delivery would cost the path every delivery takes; sync validation cannot hang.
    const { webhooks } = receiver({ 'user.created': schemaOf((value) => ({ value })) });
    webhooks.on('user.created', () => {});
    const body = JSON.stringify(createTestEvent('user.created'));
    const answer = answerNow(webhooks, {
      body,
      headers: { 'x-service-signature': signPayload(body, secret) },
    });
    expect(answer).not.toBeInstanceOf(Promise);
    expect((answer as { status: number }).status).toBe(200);
  });
});

describe("issue 45: the verified id and type are the event's, whatever the schema outputs", () => {
  for (const [field, changed] of [
    ['type', { type: 'payment.succeeded' }],
    ['id', { id: 'evt_someone_elses' }],
  ] as const) {
    test(`a transform that changes \`${field}\` is a mismatch: no handler runs, nothing is claimed`, async () => {
      const store = new MemoryStore();
      const relabel = z
        .object({ id: z.string(), type: z.string() })
        .loose()
        .transform((event) => ({ ...event, ...changed }));
      const { webhooks, errors } = receiver({ 'user.created': relabel }, store);
      const ran: string[] = [];
      webhooks.on('user.created', (event) => {
        ran.push(`user.created handler saw ${event.type}`);
      });
      webhooks.on('payment.succeeded', () => {
        ran.push('payment handler');
      });
      // An application's own router, as many have: it routes by the type it is given.
      webhooks.onAny((event) => {
        if (event.type === 'payment.succeeded') ran.push('payment route of onAny');
      });
      const event = createTestEvent('user.created');
      const response = await deliver(webhooks, event, { secret });
      expect(response.status).toBe(500);
      expect(JSON.parse(response.body).error.code).toBe('event_schema_mismatch');
      expect(ran).toEqual([]);
      expect(errors).toHaveLength(1);
      const error = errors[0] as EventSchemaError;
      expect(error).toBeInstanceOf(EventSchemaError);
      expect(error).toMatchObject({ eventType: 'user.created', eventId: event.id });
      expect(error.issues).toEqual([{ path: [field], message: expect.stringMatching(/verified/) }]);
      // Nothing was claimed, under the verified id or the output's: a receiver without the schema, on
      // the same store, handles both as new events.
      let fresh = 0;
      const plain = createWebhooks({ secret, store }).on('user.created', () => {
        fresh++;
      });
      for (const copy of [event, { ...event, id: 'evt_someone_elses' }]) {
        const answer = await deliver(plain, copy, { secret });
        expect(answer.status).toBe(200);
        expect(answer.headers['x-webhook-duplicate']).toBeUndefined();
      }
      expect(fresh).toBe(2);

      const entry: InboxEntry = await sealed({ event, receivedAt: Date.now(), secretIndex: 0 }, secret);
      await expect(webhooks.process(entry)).rejects.toBeInstanceOf(EventSchemaError);
      const body = JSON.stringify(event);
      await expect(webhooks.verifyAndParse(body, signPayload(body, secret))).rejects.toBeInstanceOf(
        EventSchemaError,
      );
      expect(ran).toEqual([]);
    });
  }

  test('an output that keeps the id and type, or carries neither, is handled under the verified ones', async () => {
    const store = new MemoryStore();
    const { webhooks, errors } = receiver(
      {
        'user.created': z.object({ id: z.string(), type: z.string() }).loose(),
        'user.deleted': z
          .object({ data: z.object({ object: z.string() }) })
          .transform((event) => ({ data: event.data })),
      },
      store,
    );
    const seen: unknown[] = [];
    webhooks.on(['user.created', 'user.deleted'], (event) => {
      seen.push(event);
    });
    expect((await deliver(webhooks, createTestEvent('user.created'), { secret })).status).toBe(200);
    const deleted = createTestEvent('user.deleted');
    expect((await deliver(webhooks, deleted, { secret })).status).toBe(200);
    expect(seen[1]).toEqual({ data: { object: deleted.data.object } });
    // Deduplicated by the verified id, though the output has none.
    const again = await deliver(webhooks, deleted, { secret });
    expect(again.headers['x-webhook-duplicate']).toBe('true');
    expect(errors).toEqual([]);
  });
});

describe('issue 45: whatever a schema throws is a mismatch with a safe message', () => {
  const revoked = Proxy.revocable({}, {});
  revoked.revoke();
  const throwables: [string, () => unknown][] = [
    ['a null-prototype object', () => Object.create(null)],
    [
      'an object whose toString throws',
      () => ({
        toString() {
          throw new Error('no text');
        },
      }),
    ],
    [
      'an Error whose message getter throws',
      () =>
        Object.defineProperty(new Error(), 'message', {
          get() {
            throw new Error('no message');
          },
        }),
    ],
    ['a Symbol', () => Symbol('odd')],
    ['a revoked Proxy', () => revoked.proxy],
    ['undefined', () => undefined],
  ];
  for (const [what, make] of throwables) {
    for (const how of ['throws', 'rejects with'] as const) {
      test(`a schema that ${how} ${what}: 500 event_schema_mismatch, never internal_error`, async () => {
        const thrown = make();
        const schema = schemaOf(() => {
          if (how === 'rejects with') return Promise.reject(thrown);
          throw thrown;
        });
        const { webhooks, errors } = receiver({ 'user.created': schema });
        webhooks.on('user.created', () => {});
        const response = await deliver(webhooks, createTestEvent('user.created'), { secret });
        expect(JSON.parse(response.body).error.code).toBe('event_schema_mismatch');
        expect(response.status).toBe(500);
        expect(errors).toHaveLength(1);
        const error = errors[0] as EventSchemaError;
        expect(error).toBeInstanceOf(EventSchemaError);
        expect(error.cause).toBe(thrown);
        expect(error.issues).toHaveLength(1);
        expect(typeof error.issues[0]!.message).toBe('string');
        expect(error.message).toMatch(/the schema threw/);
      });
    }
  }

  for (const [what, result] of [
    ['nothing', undefined],
    ['issues that are not a list', { issues: 'amount is wrong' }],
    ['an issue that is null', { issues: [null] }],
    [
      'an issue whose path holds an unprintable key',
      { issues: [{ message: 'bad', path: [{ key: Object.create(null) }] }] },
    ],
  ] as const) {
    test(`a schema that returns ${what}: 500 event_schema_mismatch, never internal_error`, async () => {
      const { webhooks, errors } = receiver({ 'user.created': schemaOf(() => result) });
      webhooks.on('user.created', () => {});
      const response = await deliver(webhooks, createTestEvent('user.created'), { secret });
      expect(JSON.parse(response.body).error.code).toBe('event_schema_mismatch');
      expect(errors).toHaveLength(1);
      expect(errors[0]).toBeInstanceOf(EventSchemaError);
    });
  }
});
