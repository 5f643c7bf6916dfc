import {
  type AnyWebhookEvent,
  createWebhooks,
  type PaymentData,
  type UserData,
  type WebhookEvent,
  type WebhookResponse,
} from 'service-webhooks';
import { createTestEvent } from 'service-webhooks/testing';
import { describe, expectTypeOf, test } from 'vitest';

const webhooks = createWebhooks({ secret: 'whsec_types' });

describe('on() is typed by the event name', () => {
  test('one name narrows the event and its data, without casts', () => {
    webhooks.on('user.created', (event) => event.data.email);
    webhooks.on('user.created', (event, ctx) => {
      expectTypeOf(event.type).toEqualTypeOf<'user.created'>();
      expectTypeOf(event.data).toEqualTypeOf<UserData>();
      expectTypeOf(event.data.email).toBeString();
      expectTypeOf(event.data.object).toEqualTypeOf<'user'>();
      expectTypeOf(event.created).toBeNumber();
      expectTypeOf(event.livemode).toBeBoolean();
      expectTypeOf(ctx.signal).toEqualTypeOf<AbortSignal>();
      expectTypeOf(ctx.secretIndex).toBeNumber();
    });
  });

  test('a wrong event name does not compile', () => {
    // @ts-expect-error misspelled
    webhooks.on('user.creatd', () => {});
    // @ts-expect-error not an event of the service
    webhooks.on('invoice.paid', () => {});
    // @ts-expect-error not a resource of the service
    webhooks.on('invoice.*', () => {});
    // @ts-expect-error one wrong name in an array
    webhooks.on(['user.created', 'user.removed'], () => {});
  });

  test('an array gives the union of its events', () => {
    webhooks.on(['payment.failed', 'payment.refunded'], (event) => {
      expectTypeOf(event.type).toEqualTypeOf<'payment.failed' | 'payment.refunded'>();
      expectTypeOf(event.data).toEqualTypeOf<PaymentData>();
    });
  });

  test('a wildcard gives every event of its resource', () => {
    webhooks.on('payment.*', (event) => {
      expectTypeOf(event.type).toEqualTypeOf<'payment.succeeded' | 'payment.failed' | 'payment.refunded'>();
    });
    webhooks.on('user.*', (event) => {
      expectTypeOf(event.data.email).toBeString();
    });
  });

  test('onAny gets the union, narrowed by type', () => {
    webhooks.onAny((event) => {
      expectTypeOf(event).toEqualTypeOf<AnyWebhookEvent>();
      if (event.type === 'user.deleted') expectTypeOf(event.data.name).toBeString();
      // @ts-expect-error not every event has user data
      event.data.email;
    });
  });

  test('payment and project data fields the service does not document do not compile', () => {
    webhooks.on('payment.succeeded', (event) => {
      // @ts-expect-error amount is not documented; declare it by declaration merging first
      event.data.amount;
      expectTypeOf(event.data.id).toBeString();
    });
    webhooks.on('project.updated', (event) => {
      // @ts-expect-error name is not documented
      event.data.name;
    });
  });

  test('a handler for one type cannot be registered for another', () => {
    const onUser = (event: WebhookEvent<'user.created', UserData>) => event.data.email;
    webhooks.on('user.created', onUser);
    // @ts-expect-error a user handler for payment events
    webhooks.on('payment.failed', onUser);
  });
});

describe('the rest of the surface', () => {
  test('handle answers a response, verifyAndParse an event', () => {
    expectTypeOf(webhooks.handle({ body: '', headers: {} })).resolves.toEqualTypeOf<WebhookResponse>();
    expectTypeOf(webhooks.verifyAndParse(new Uint8Array(), undefined)).resolves.toEqualTypeOf<WebhookEvent>();
    expectTypeOf(webhooks.handle({ body: new Uint8Array(), headers: new Headers() })).toBeObject();
    // @ts-expect-error a parsed body is not a raw body
    webhooks.handle({ body: { id: 'evt' }, headers: {} });
  });

  test('options are checked', () => {
    // @ts-expect-error the secret is required
    createWebhooks({});
    // @ts-expect-error only 'reject' or 'process'
    createWebhooks({ secret: 's', onStoreError: 'ignore' });
    createWebhooks({ secret: ['new', 'old'], store: undefined as never, handlerTimeoutMs: 10_000 });
  });

  test('createTestEvent is typed by the name', () => {
    expectTypeOf(createTestEvent('user.updated').data.email).toBeString();
    createTestEvent('payment.failed', { data: { id: 'pay_1' } });
    // @ts-expect-error unknown type
    createTestEvent('user.removed');
  });
});
