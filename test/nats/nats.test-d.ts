import type { NatsConnection } from '@nats-io/transport-node';
import type { InboxAdmin, InboxQueue, InboxStats, Webhooks } from 'service-webhooks';
import { createWebhooks } from 'service-webhooks';
import {
  type NatsInbox,
  type NatsInboxAdmin,
  type NatsInboxNames,
  type NatsWorker,
  type NatsWorkerOptions,
  natsInbox,
  natsInboxAdmin,
  natsInboxNames,
  startNatsWorker,
} from 'service-webhooks/nats';
import { describe, expectTypeOf, test } from 'vitest';

declare const connection: NatsConnection;
declare const webhooks: Webhooks;

describe('service-webhooks/nats', () => {
  test('the door is an InboxQueue for createWebhooks, on a connection', () => {
    expectTypeOf(natsInbox({ connection })).toEqualTypeOf<NatsInbox>();
    expectTypeOf(natsInbox({ connection })).toExtend<InboxQueue>();
    createWebhooks({ secret: 'whsec_types', inbox: natsInbox({ connection, stream: 'billing' }) });
    // @ts-expect-error the door takes a connection, not a URL (it has nothing to close one with)
    natsInbox({ connection: 'nats://127.0.0.1:4222' });
  });

  test('the worker takes a connection or a URL and resolves to a NatsWorker', () => {
    expectTypeOf(startNatsWorker(webhooks, { connection })).toEqualTypeOf<Promise<NatsWorker>>();
    expectTypeOf(startNatsWorker).parameter(1).toEqualTypeOf<NatsWorkerOptions>();
    void startNatsWorker(webhooks, {
      connection: 'nats://127.0.0.1:4222',
      ackWaitMs: 10_000,
      maxDeliveries: 10,
    });
    expectTypeOf<NatsWorker['stats']>().returns.toEqualTypeOf<Promise<InboxStats>>();
    // Called as users call it, rather than compared as a tuple: TypeScript 5 and 7 disagree on whether
    // the parameters equal `[force?: boolean]` under expect-type's strict equality; the calls agree.
    expectTypeOf<NatsWorker['close']>().toBeCallableWith();
    expectTypeOf<NatsWorker['close']>().toBeCallableWith(true);
    expectTypeOf<NatsWorker['close']>().returns.toEqualTypeOf<Promise<void>>();
    // @ts-expect-error force is a boolean
    void ({} as NatsWorker).close('now');
    // @ts-expect-error options are checked: no such option
    void startNatsWorker(webhooks, { connection, visibilityTimeoutSeconds: 30 });
  });

  test('the admin is an InboxAdmin whose engine is nats', () => {
    const admin = natsInboxAdmin({ connection: 'nats://127.0.0.1:4222' });
    expectTypeOf(admin).toEqualTypeOf<NatsInboxAdmin>();
    expectTypeOf(admin).toExtend<InboxAdmin>();
    expectTypeOf(admin.engine).toEqualTypeOf<'nats'>();
    expectTypeOf(natsInboxNames('billing')).toEqualTypeOf<NatsInboxNames>();
  });
});
