import { ConfigurationError, MemoryStore, StoreUnavailableError } from 'service-webhooks';
import { storeConformanceSuite } from 'service-webhooks/testing';
import { describe, expect, test } from 'vitest';

storeConformanceSuite({ name: 'MemoryStore', createStore: () => new MemoryStore(), describe, test });

function fakeClock() {
  let now = 1_000;
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe('MemoryStore', () => {
  test('leases and TTLs follow the injected clock exactly', async () => {
    const clock = fakeClock();
    const store = new MemoryStore({ now: clock.now });
    expect(await store.claim('evt_1', 'a', 45_000)).toBe('claimed');
    clock.advance(44_999);
    expect(await store.claim('evt_1', 'b', 45_000)).toBe('in_progress');
    clock.advance(1);
    expect(await store.claim('evt_1', 'b', 45_000)).toBe('claimed');
    expect(await store.complete('evt_1', 'a', 1_000)).toBe('lost');
    expect(await store.complete('evt_1', 'b', 86_400_000)).toBe('completed');
    clock.advance(86_399_999);
    expect(await store.claim('evt_1', 'c', 45_000)).toBe('completed');
    clock.advance(2);
    expect(await store.claim('evt_1', 'c', 45_000)).toBe('claimed');
  });

  test('when full, the oldest handled ids are forgotten first, and lookups do not refresh them', async () => {
    const store = new MemoryStore({ maxEvents: 3 });
    for (const id of ['a', 'b', 'c']) {
      await store.claim(id, id, 60_000);
      await store.complete(id, id, 60_000);
    }
    // Looking up 'a' again must not make it the newest: the replay window is by age, not by popularity.
    expect(await store.claim('a', 'x', 60_000)).toBe('completed');
    await store.claim('d', 'd', 60_000);
    await store.complete('d', 'd', 60_000);
    expect(await store.claim('a', 'y', 60_000)).toBe('claimed');
    for (const id of ['b', 'c', 'd']) expect(await store.claim(id, 'z', 60_000)).toBe('completed');
  });

  test('events in progress are never evicted to make room for handled ones', async () => {
    const store = new MemoryStore({ maxEvents: 2 });
    expect(await store.claim('busy', 'owner', 60_000)).toBe('claimed');
    for (let i = 0; i < 10; i++) {
      await store.claim(`done-${i}`, 't', 60_000);
      await store.complete(`done-${i}`, 't', 60_000);
    }
    expect(await store.claim('busy', 'other', 60_000)).toBe('in_progress');
    expect(await store.complete('busy', 'owner', 60_000)).toBe('completed');
  });

  test('more events in progress than maxInProgress: the claim fails (503), expired leases make room', async () => {
    const clock = fakeClock();
    const store = new MemoryStore({ maxInProgress: 2, now: clock.now });
    await store.claim('a', 'a', 1_000);
    await store.claim('b', 'b', 5_000);
    await expect(store.claim('c', 'c', 1_000)).rejects.toBeInstanceOf(StoreUnavailableError);
    clock.advance(1_000);
    expect(await store.claim('c', 'c', 1_000)).toBe('claimed');
  });

  test('refuses an unbounded or nonsensical configuration', () => {
    expect(() => new MemoryStore({ maxEvents: 0 })).toThrow(ConfigurationError);
    expect(() => new MemoryStore({ maxEvents: Number.POSITIVE_INFINITY })).toThrow(/bounds memory/);
    expect(() => new MemoryStore({ maxInProgress: -1 })).toThrow(ConfigurationError);
    expect(() => new MemoryStore({ now: 5 as never })).toThrow(/now/);
  });
});
