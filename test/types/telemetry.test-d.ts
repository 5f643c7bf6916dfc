import { createWebhooks, type Webhooks, type WebhookTelemetry } from 'service-webhooks';
import { openTelemetry } from 'service-webhooks/opentelemetry';
import { describe, expectTypeOf, test } from 'vitest';

describe('the telemetry option', () => {
  test('takes openTelemetry(), with or without providers, and engines read it back', () => {
    const webhooks = createWebhooks({ secret: 'whsec_types', telemetry: openTelemetry() });
    expectTypeOf(webhooks).toEqualTypeOf<Webhooks>();
    expectTypeOf(webhooks.telemetry).toEqualTypeOf<WebhookTelemetry | undefined>();
    expectTypeOf(openTelemetry).parameter(0).toEqualTypeOf<
      | {
          readonly tracerProvider?: import('@opentelemetry/api').TracerProvider;
          readonly meterProvider?: import('@opentelemetry/api').MeterProvider;
        }
      | undefined
    >();
  });

  test('refuses what is not a plug-in', () => {
    // @ts-expect-error the API object is not a plug-in
    createWebhooks({ secret: 'whsec_types', telemetry: { trace: {} } });
    // @ts-expect-error the factory, not called
    createWebhooks({ secret: 'whsec_types', telemetry: openTelemetry });
  });
});
