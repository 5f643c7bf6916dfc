/**
 * The dashboard's closed lists (why a delivery was made; what a Send button makes) are each one
 * `as const` array, and the union the API types, the server and the page use is derived from it: a
 * label or case added in one place is everywhere, with nothing hand-written to drift.
 */
import { describe, expect, expectTypeOf, test } from 'vitest';
import {
  DELIVERY_LABELS,
  type DeliveryLabel,
  SEND_CASES,
  type SendCase,
  type SendRequest,
} from '../../src/dashboard/api-types.js';
import { toDevDelivery } from '../../src/dashboard/dev-delivery.js';
import type { Delivery } from '../../src/sandbox/index.js';

function sandboxDelivery(label: string | undefined): Delivery {
  return {
    id: 'dlv_1',
    event_id: 'evt_1',
    event_type: 'user.created',
    status: 'pending',
    created_at: new Date(0).toISOString(),
    attempts: [],
    ...(label === undefined ? {} : { label }),
  } as unknown as Delivery;
}

describe('the delivery labels', () => {
  test('the union is the array’s members', () => {
    expectTypeOf<DeliveryLabel>().toEqualTypeOf<(typeof DELIVERY_LABELS)[number]>();
    expect(DELIVERY_LABELS).toEqual([
      'sent',
      'replay',
      'edited',
      'forged_signature',
      'stale_created',
      'concurrent_copy',
      'cli',
      'api',
    ]);
  });

  test('a sandbox delivery keeps each label of the array, and any other is `api`', () => {
    for (const label of DELIVERY_LABELS) {
      expect(toDevDelivery(sandboxDelivery(label), 'http://localhost:3000/webhooks', false, 1).label).toBe(
        label,
      );
    }
    for (const other of [undefined, 'made_up']) {
      expect(toDevDelivery(sandboxDelivery(other), 'http://localhost:3000/webhooks', false, 1).label).toBe(
        'api',
      );
    }
  });
});

describe('the send cases', () => {
  test('the request’s `case` is the array’s members', () => {
    expectTypeOf<SendCase>().toEqualTypeOf<(typeof SEND_CASES)[number]>();
    expectTypeOf<NonNullable<SendRequest['case']>>().toEqualTypeOf<SendCase>();
    expect(SEND_CASES).toEqual(['sent', 'forged_signature', 'stale_created', 'concurrent_copies']);
  });
});
