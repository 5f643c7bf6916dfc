/** The page's copy of the history (src/dashboard/ui/deliveries-store.ts): plain functions, no DOM. */
import { describe, expect, it } from 'vitest';
import type { DevDelivery } from '../../src/dashboard/api-types.js';
import { EMPTY, fromList, upsert } from '../../src/dashboard/ui/deliveries-store.js';

function delivery(id: string, createdAt: string, changes: Partial<DevDelivery> = {}): DevDelivery {
  return {
    id,
    event_id: `evt_${id}`,
    event_type: 'user.created',
    status: 'pending',
    label: 'sent',
    url: 'http://localhost:3000/webhooks',
    created_at: createdAt,
    next_attempt_at: null,
    next_attempt: 1,
    in_flight: false,
    revision: 1,
    event: {},
    attempts: [],
    worker_runs: [],
    retried: true,
    ...changes,
  };
}

describe('the page’s deliveries', () => {
  it('puts a new delivery where its time belongs, newest first, and drops the oldest past the limit', () => {
    let held = fromList(
      [delivery('a', '2026-11-27T10:00:00.000Z'), delivery('c', '2026-11-27T10:00:02.000Z')],
      3,
    );
    expect(held.order).toEqual(['c', 'a']);
    held = upsert(held, delivery('b', '2026-11-27T10:00:01.000Z'), 3);
    expect(held.order).toEqual(['c', 'b', 'a']);
    held = upsert(held, delivery('d', '2026-11-27T10:00:03.000Z'), 3);
    expect(held.order).toEqual(['d', 'c', 'b']);
    expect(held.byId.has('a')).toBe(false);
  });

  it('keeps the newer copy when an action’s answer arrives after the stream moved on', () => {
    const created = delivery('a', '2026-11-27T10:00:00.000Z');
    const acknowledged = delivery('a', '2026-11-27T10:00:00.000Z', {
      status: 'succeeded',
      next_attempt: null,
      revision: 3,
    });
    let held = upsert(EMPTY, acknowledged, 10);
    const unchanged = held;
    held = upsert(held, created, 10);
    expect(held).toBe(unchanged);
    expect(held.byId.get('a')?.status).toBe('succeeded');
    // A report joining the delivery is a newer revision: it replaces the row's object, in place.
    const reported = { ...acknowledged, revision: 4 };
    held = upsert(held, reported, 10);
    expect(held.byId.get('a')).toBe(reported);
    expect(held.order).toEqual(['a']);
  });
});
