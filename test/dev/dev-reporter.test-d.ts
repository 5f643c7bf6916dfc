import { createWebhooks, type WebhookLogger, type WebhooksOptions } from 'service-webhooks';
import {
  type DevReporter,
  type DevReporterOptions,
  type DevReporterQueue,
  devReporter,
} from 'service-webhooks/dev';
import { describe, expectTypeOf, test } from 'vitest';

describe('devReporter', () => {
  test('is a logger for createWebhooks, with or without an inner logger', () => {
    expectTypeOf(devReporter()).toEqualTypeOf<DevReporter>();
    expectTypeOf(devReporter()).toExtend<WebhookLogger>();
    expectTypeOf(devReporter()).toExtend<NonNullable<WebhooksOptions['logger']>>();
    createWebhooks({ secret: 'whsec_types', logger: devReporter() });
    createWebhooks({ secret: 'whsec_types', logger: devReporter({ logger: console }) });
  });

  test('flush is optional on the type: it is the inner logger’s own when no dashboard is set', () => {
    expectTypeOf(devReporter().flush).toEqualTypeOf<(() => Promise<void>) | undefined>();
    expectTypeOf(devReporter().queued).toEqualTypeOf<(() => DevReporterQueue) | undefined>();
  });

  test('takes its options, and refuses what is not one', () => {
    expectTypeOf(devReporter).parameter(0).toEqualTypeOf<DevReporterOptions | undefined>();
    devReporter({
      url: 'http://127.0.0.1:4010/_dev/api/report?token=t',
      flushIntervalMs: 20,
      maxQueued: 10,
      maxQueuedBytes: 65_536,
    });
    // @ts-expect-error the interval is a number of milliseconds
    devReporter({ flushIntervalMs: '50' });
    // @ts-expect-error a logger has info, warn and error
    devReporter({ logger: { info() {} } });
  });
});
