import { type } from 'arktype';
import { createWebhooks, type PaymentData, type UserData, type WebhookEvent } from 'service-webhooks';
import { eventSchemas } from 'service-webhooks/schemas';
import * as v from 'valibot';
import { describe, expectTypeOf, test } from 'vitest';
import { z } from 'zod';

const secret = 'whsec_types';

describe('the handler is typed by the schema of its event type', () => {
  test('zod: the output type, a transform included', () => {
    const webhooks = createWebhooks({
      secret,
      schemas: {
        'payment.succeeded': z
          .object({ data: z.object({ object: z.literal('payment'), id: z.string(), amount: z.number() }) })
          .loose()
          .transform((event) => ({ ...event, cents: BigInt(event.data.amount) })),
      },
    });
    webhooks.on('payment.succeeded', (event) => {
      expectTypeOf(event.data.amount).toEqualTypeOf<number>();
      expectTypeOf(event.cents).toEqualTypeOf<bigint>();
    });
    // Types without a schema keep the documented event.
    webhooks.on('user.created', (event) => {
      expectTypeOf(event).toEqualTypeOf<WebhookEvent<'user.created', UserData>>();
    });
  });

  test('valibot', () => {
    const webhooks = createWebhooks({
      secret,
      schemas: {
        'payment.failed': v.looseObject({
          data: v.looseObject({
            object: v.literal('payment'),
            id: v.string(),
            reason: v.picklist(['card', 'fraud']),
          }),
        }),
      },
    });
    webhooks.on('payment.failed', (event) => {
      expectTypeOf(event.data.reason).toEqualTypeOf<'card' | 'fraud'>();
    });
  });

  test('arktype', () => {
    const webhooks = createWebhooks({
      secret,
      schemas: { 'project.created': type({ data: { object: "'project'", id: 'string', name: 'string' } }) },
    });
    webhooks.on('project.created', (event) => {
      expectTypeOf(event.data.name).toEqualTypeOf<string>();
    });
  });

  test('a wildcard or a list is the union of each type as its schema (or the spec) gives it', () => {
    const webhooks = createWebhooks({
      secret,
      schemas: { 'payment.refunded': z.object({ refundedAt: z.string() }).transform((e) => e.refundedAt) },
    });
    webhooks.on('payment.*', (event) => {
      expectTypeOf(event).toEqualTypeOf<
        WebhookEvent<'payment.succeeded', PaymentData> | WebhookEvent<'payment.failed', PaymentData> | string
      >();
    });
    webhooks.on(['payment.refunded', 'user.deleted'], (event) => {
      expectTypeOf(event).toEqualTypeOf<string | WebhookEvent<'user.deleted', UserData>>();
    });
    // The chain keeps the schemas.
    webhooks.onError(() => {}).on('payment.refunded', (event) => expectTypeOf(event).toEqualTypeOf<string>());
  });

  test('the first-party schemas keep the documented types', () => {
    const webhooks = createWebhooks({ secret, schemas: eventSchemas });
    webhooks.on('user.created', (event) => {
      expectTypeOf(event).toEqualTypeOf<WebhookEvent<'user.created', UserData>>();
      expectTypeOf(event.data.email).toBeString();
    });
  });

  test('a schema for a type the service does not send, or a non-schema, does not compile', () => {
    // @ts-expect-error not an event type
    createWebhooks({ secret, schemas: { 'invoice.paid': z.object({}) } });
    // @ts-expect-error not a Standard Schema
    createWebhooks({ secret, schemas: { 'user.created': { parse: () => ({}) } } });
  });
});
