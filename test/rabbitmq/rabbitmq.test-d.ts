import { createWebhooks, type InboxAdmin, type InboxQueue, type InboxStats } from 'service-webhooks';
import {
  type RabbitMQInbox,
  type RabbitMQInboxAdmin,
  type RabbitMQPublishError,
  type RabbitMQWorker,
  rabbitMQInbox,
  rabbitMQInboxAdmin,
  rabbitMQInboxStats,
  startRabbitMQWorker,
} from 'service-webhooks/rabbitmq';
import { describe, expectTypeOf, test } from 'vitest';

describe('service-webhooks/rabbitmq', () => {
  test('the door is an InboxQueue for createWebhooks, with its queue and close', () => {
    const inbox = rabbitMQInbox({ url: 'amqp://127.0.0.1' });
    expectTypeOf(inbox).toEqualTypeOf<RabbitMQInbox>();
    expectTypeOf(inbox).toExtend<InboxQueue>();
    expectTypeOf(inbox.queue).toEqualTypeOf<string>();
    expectTypeOf(inbox.close).toEqualTypeOf<() => Promise<void>>();
    createWebhooks({ secret: 'whsec_types', inbox });
    // @ts-expect-error the URL is required
    rabbitMQInbox({ queue: 'webhooks' });
  });

  test('the worker takes the receiver and the common worker options', () => {
    const webhooks = createWebhooks({ secret: 'whsec_types' });
    const worker = startRabbitMQWorker(webhooks, {
      url: 'amqp://127.0.0.1',
      queue: 'webhooks',
      concurrency: 5,
      attempts: 3,
      backoff: [1_000, 5_000],
      maxCrashes: 3,
      reconnectDelayMs: 100,
      monitor: false,
    });
    expectTypeOf(worker).toEqualTypeOf<RabbitMQWorker>();
    expectTypeOf(worker.close).toEqualTypeOf<(force?: boolean) => Promise<void>>();
    expectTypeOf(worker.stats).returns.toEqualTypeOf<Promise<InboxStats>>();
    // @ts-expect-error maxCrashes is a number
    startRabbitMQWorker(webhooks, { url: 'amqp://127.0.0.1', maxCrashes: 'many' });
  });

  test('the admin is an InboxAdmin of engine rabbitmq; the figures read from a channel', () => {
    const admin = rabbitMQInboxAdmin({ url: 'amqp://127.0.0.1' });
    expectTypeOf(admin).toEqualTypeOf<RabbitMQInboxAdmin>();
    expectTypeOf(admin).toExtend<InboxAdmin>();
    expectTypeOf(admin.engine).toEqualTypeOf<'rabbitmq'>();
    expectTypeOf(rabbitMQInboxStats).returns.toEqualTypeOf<Promise<InboxStats>>();
  });

  test('a refused publish names why', () => {
    expectTypeOf<RabbitMQPublishError['code']>().toEqualTypeOf<
      'returned' | 'nacked' | 'unconfirmed' | 'closed'
    >();
  });
});
