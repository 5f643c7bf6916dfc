import {
  createWebhooks,
  type DeliveryRecord,
  type DeliveryTelemetry,
  type HandlerStep,
  WANTS_HANDLER_STEPS,
  type WebhookLogger,
} from 'service-webhooks';
import { describe, expectTypeOf, test } from 'vitest';

describe('the handler steps', () => {
  test('a record lists them, read-only, and an inbox run says its attempt', () => {
    expectTypeOf<DeliveryRecord['handlers']>().toEqualTypeOf<readonly HandlerStep[] | undefined>();
    expectTypeOf<HandlerStep['outcome']>().toEqualTypeOf<'succeeded' | 'failed'>();
    expectTypeOf<NonNullable<DeliveryRecord['inboxRun']>>().toEqualTypeOf<{
      readonly attempt: number;
      readonly replayId: string | undefined;
    }>();
  });

  test('a plug-in may leave handlerSettled out; a logger asks with the symbol', () => {
    expectTypeOf<DeliveryTelemetry['handlerSettled']>().toEqualTypeOf<
      ((step: HandlerStep) => void) | undefined
    >();
    const logger: WebhookLogger & { readonly [WANTS_HANDLER_STEPS]: true } = {
      [WANTS_HANDLER_STEPS]: true,
      info() {},
      warn() {},
      error() {},
    };
    createWebhooks({ secret: 'whsec_types', logger });
    expectTypeOf(WANTS_HANDLER_STEPS).toEqualTypeOf<typeof WANTS_HANDLER_STEPS>();
  });
});
