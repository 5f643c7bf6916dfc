import {
  createWebhooks,
  type IdempotencyStore,
  type OrderingMode,
  type OrderingRules,
  type ProcessResult,
  type ResourceClaimResult,
  type StaleEvent,
  type WebhookEvent,
} from 'service-webhooks';
import { describe, expectTypeOf, test } from 'vitest';

describe('the ordering option is typed like on()', () => {
  test('event names and wildcards to a mode', () => {
    createWebhooks({
      secret: 'whsec_types',
      ordering: { 'user.*': 'latest', 'payment.succeeded': 'serialize' },
    });
    // @ts-expect-error an event the service does not send
    createWebhooks({ secret: 'whsec_types', ordering: { 'user.renamed': 'latest' } });
    // @ts-expect-error a mode that does not exist
    createWebhooks({ secret: 'whsec_types', ordering: { 'user.*': 'newest' } });
    expectTypeOf<OrderingRules['user.*']>().toEqualTypeOf<OrderingMode | undefined>();
  });

  test('onStale gets the event and where it stood', () => {
    createWebhooks({ secret: 'whsec_types' }).onStale((event, stale) => {
      expectTypeOf(event).toEqualTypeOf<WebhookEvent>();
      expectTypeOf(stale).toEqualTypeOf<StaleEvent>();
      expectTypeOf(stale.position).toBeNumber();
    });
    expectTypeOf<ProcessResult>().toEqualTypeOf<'handled' | 'duplicate' | 'stale'>();
  });

  test('the store operations are optional, and a resource claim narrows by outcome', () => {
    expectTypeOf<IdempotencyStore['claimResource']>().toEqualTypeOf<
      ((resource: string, token: string, leaseMs: number) => Promise<ResourceClaimResult>) | undefined
    >();
    const found = {} as ResourceClaimResult;
    if (found.outcome === 'busy') expectTypeOf(found.retryAfterMs).toBeNumber();
    else expectTypeOf(found.watermark).toEqualTypeOf<number | undefined>();
  });
});
