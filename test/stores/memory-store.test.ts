import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { LRUCache } from 'lru-cache';
import { ConfigurationError, MemoryStore, StoreUnavailableError } from 'service-webhooks';
import { storeConformanceSuite } from 'service-webhooks/testing';
import { describe, expect, test } from 'vitest';
import { SYNCHRONOUS_CALLS, synchronousCallsOf } from '../../src/synchronous-store.js';

storeConformanceSuite({
  name: 'MemoryStore',
  createStore: () => new MemoryStore(),
  describe: describe.concurrent,
  test,
  ordering: true,
});

/**
 * A full garbage collection, made available at run time (the test runner starts Node without
 * --expose-gc): with it, a heap difference measures what is alive, not what happened to be collected.
 */
function collectGarbage(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/** Heap and typed-array bytes that `build` leaves alive, per object built (`count` are kept alive). */
function bytesAlivePer(build: () => unknown, count = 8): number {
  const gc = collectGarbage();
  const used = () => {
    gc();
    gc();
    const { heapUsed, arrayBuffers } = process.memoryUsage();
    return heapUsed + arrayBuffers;
  };
  const before = used();
  const kept = Array.from({ length: count }, build);
  const after = used();
  expect(kept).toHaveLength(count);
  return (after - before) / count;
}

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

  test('complete: by the holder even after its lease ended, by anyone when nothing live holds the key', async () => {
    const clock = fakeClock();
    const store = new MemoryStore({ now: clock.now });
    // The holder, late, with nobody having taken over.
    expect(await store.claim('late', 'a', 1_000)).toBe('claimed');
    clock.advance(5_000);
    expect(await store.complete('late', 'a', 10_000)).toBe('completed');
    expect(await store.claim('late', 'b', 1_000)).toBe('completed');
    expect(await store.complete('late', 'a', 10_000)).toBe('lost');
    // Never claimed.
    expect(await store.complete('absent', 'a', 10_000)).toBe('completed');
    expect(await store.claim('absent', 'b', 1_000)).toBe('completed');
    // Another token's lease: lost while it lives (to the millisecond), replaced once it ended.
    expect(await store.claim('other', 'a', 1_000)).toBe('claimed');
    clock.advance(999);
    expect(await store.complete('other', 'b', 10_000)).toBe('lost');
    expect(await store.claim('other', 'c', 1_000)).toBe('in_progress');
    clock.advance(1);
    expect(await store.complete('other', 'b', 10_000)).toBe('completed');
    expect(await store.complete('other', 'a', 10_000)).toBe('lost');
    expect(await store.release('other', 'a')).toBeUndefined();
    expect(await store.claim('other', 'c', 1_000)).toBe('completed');
    // A completion lives through its last millisecond, and may be recorded again after it.
    clock.advance(10_000);
    expect(await store.complete('other', 'c', 10_000)).toBe('lost');
    clock.advance(1);
    expect(await store.complete('other', 'c', 10_000)).toBe('completed');
  });

  test('renew: the lease ends leaseMs after the renewal, on the same terms as complete', async () => {
    const clock = fakeClock();
    const store = new MemoryStore({ now: clock.now });
    expect(await store.claim('evt', 'a', 1_000)).toBe('claimed');
    clock.advance(900);
    expect(await store.renew('evt', 'a', 1_000)).toBe('renewed');
    clock.advance(999);
    expect(await store.claim('evt', 'b', 1_000)).toBe('in_progress');
    expect(await store.renew('evt', 'b', 60_000)).toBe('lost');
    clock.advance(1);
    // Ended, nobody took over: the holder gets it back, and a renewal may also shorten the lease.
    expect(await store.renew('evt', 'a', 500)).toBe('renewed');
    expect(await store.claim('evt', 'b', 1_000)).toBe('in_progress');
    clock.advance(500);
    // Ended again: a stranger's renewal is as good as a claim.
    expect(await store.renew('evt', 'b', 1_000)).toBe('renewed');
    expect(await store.renew('evt', 'a', 1_000)).toBe('lost');
    expect(await store.complete('evt', 'a', 1_000)).toBe('lost');
    expect(await store.complete('evt', 'b', 10_000)).toBe('completed');
    expect(await store.renew('evt', 'b', 1_000)).toBe('lost');
    expect(await store.claim('evt', 'c', 1_000)).toBe('completed');
    clock.advance(10_001);
    expect(await store.renew('evt', 'c', 1_000)).toBe('renewed');
    expect(await store.claim('evt', 'd', 1_000)).toBe('in_progress');
    expect(await store.renew('never-claimed', 'a', 1_000)).toBe('renewed');
    expect(await store.claim('never-claimed', 'b', 1_000)).toBe('in_progress');
  });

  test('a renewal that adds a lease counts against maxInProgress; one that extends a lease does not', async () => {
    const clock = fakeClock();
    const store = new MemoryStore({ maxInProgress: 2, now: clock.now });
    await store.claim('a', 'a', 1_000);
    await store.claim('b', 'b', 5_000);
    await expect(store.renew('c', 'c', 1_000)).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await store.renew('a', 'a', 1_000)).toBe('renewed');
    clock.advance(1_000);
    expect(await store.renew('c', 'c', 1_000)).toBe('renewed');
    expect(await store.claim('c', 'x', 1_000)).toBe('in_progress');
  });

  test('the synchronous calls answer as the async ones, call for call', async () => {
    // Two stores on two identical clocks, driven by one pseudo-random script (seeded: reproducible).
    const clocks = [fakeClock(), fakeClock()] as const;
    const viaPromises = new MemoryStore({ maxInProgress: 3, maxEvents: 4, now: clocks[0].now });
    const direct = new MemoryStore({ maxInProgress: 3, maxEvents: 4, now: clocks[1].now });
    expect(synchronousCallsOf(direct)).toBe(direct[SYNCHRONOUS_CALLS]()!);
    const sync = direct[SYNCHRONOUS_CALLS]()!;
    // mulberry32: small, seeded, and uniform in its high bits.
    let seed = 42;
    const next = (n: number) => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return Math.floor((((t ^ (t >>> 14)) >>> 0) / 2 ** 32) * n);
    };
    const outcome = async (call: () => unknown) => {
      try {
        return await call();
      } catch (error) {
        return error instanceof StoreUnavailableError ? 'StoreUnavailableError' : error;
      }
    };
    const seen = new Set<unknown>();
    for (let step = 0; step < 2_000; step++) {
      const [key, token, ms] = [`k${next(5)}`, `t${next(3)}`, 1 + next(3_000)];
      const operation = (['claim', 'complete', 'release', 'renew'] as const)[next(4)]!;
      const expected = await outcome(() => viaPromises[operation](key, token, ms));
      const actual = await outcome(() => sync[operation](key, token, ms));
      expect(actual, `step ${step}: ${operation}(${key}, ${token}, ${ms})`).toEqual(expected);
      seen.add(`${operation} ${String(actual)}`);
      const advance = next(1_500);
      for (const clock of clocks) clock.advance(advance);
    }
    // The script reached every answer of every call, so the comparison covered each branch.
    for (const answer of [
      'claim claimed',
      'claim in_progress',
      'claim completed',
      'claim StoreUnavailableError',
      'complete completed',
      'complete lost',
      'renew renewed',
      'renew lost',
      'renew StoreUnavailableError',
    ]) {
      expect(seen, answer).toContain(answer);
    }
  });

  test('only a MemoryStore whose four methods nobody replaced is called synchronously', () => {
    expect(synchronousCallsOf(new MemoryStore())).toBeDefined();
    const spied = new MemoryStore();
    spied.renew = async () => 'lost';
    expect(synchronousCallsOf(spied)).toBeUndefined();
    class Renewing extends MemoryStore {
      override async renew(key: string, token: string, leaseMs: number) {
        return super.renew(key, token, leaseMs);
      }
    }
    expect(synchronousCallsOf(new Renewing())).toBeUndefined();
    expect(synchronousCallsOf({ ...new MemoryStore() } as never)).toBeUndefined();
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

  test('creating a store reserves nothing for its bound: a few KiB whatever maxEvents is', () => {
    // The measure sees a preallocating cache: lru-cache sized by `max` reserves its arrays up front.
    expect(bytesAlivePer(() => new LRUCache<string, number>({ max: 100_000 }))).toBeGreaterThan(1_048_576);
    for (const maxEvents of [100_000, 10_000_000]) {
      const perStore = bytesAlivePer(() => new MemoryStore({ maxEvents }));
      expect(perStore, `new MemoryStore({ maxEvents: ${maxEvents} })`).toBeLessThan(64 * 1024);
    }
  });

  test('grows as ids arrive, keeping every id in the order they are forgotten, up to maxEvents', async () => {
    const clock = fakeClock();
    const maxEvents = 20_000;
    const store = new MemoryStore({ maxEvents, now: clock.now });
    const sync = store[SYNCHRONOUS_CALLS]()!;
    const id = (n: number) => `evt_${String(n).padStart(8, '0')}`;
    const handle = (n: number) => {
      expect(sync.claim(id(n), 't', 60_000)).toBe('claimed');
      expect(sync.complete(id(n), 't', 86_400_000)).toBe('completed');
    };
    // Events in progress all along: never evicted, whatever the completed ids do around them.
    for (let n = 0; n < 50; n++) expect(sync.claim(`busy-${n}`, 'owner', 3_600_000)).toBe('claimed');
    // From empty to full, looking every earlier id up again as it goes: lookups must not reorder them.
    for (let n = 0; n < maxEvents; n++) {
      handle(n);
      if (n % 97 === 0) expect(sync.claim(id(n >> 1), 'x', 60_000)).toBe('completed');
    }
    expect(store.size).toBe(maxEvents);
    for (let n = 0; n < maxEvents; n++) expect(sync.claim(id(n), 'x', 60_000), id(n)).toBe('completed');
    // Full: each new id forgets exactly the oldest one, and the bound holds.
    const more = 7_000;
    for (let n = maxEvents; n < maxEvents + more; n++) handle(n);
    expect(store.size).toBe(maxEvents);
    for (let n = more; n < maxEvents + more; n++)
      expect(sync.claim(id(n), 'x', 60_000), id(n)).toBe('completed');
    for (let n = 0; n < more; n++) expect(sync.claim(id(n), 'x', 60_000), id(n)).toBe('claimed');
    for (let n = 0; n < 50; n++) expect(sync.claim(`busy-${n}`, 'other', 60_000)).toBe('in_progress');
  });

  test('an id completed again after its TTL becomes the newest; expiry follows the stored time', async () => {
    const clock = fakeClock();
    const store = new MemoryStore({ maxEvents: 3, now: clock.now });
    await store.complete('a', 'a', 1_000);
    await store.complete('b', 'b', 60_000);
    await store.complete('c', 'c', 60_000);
    clock.advance(1_001);
    // 'a' ended: recorded again, it is now the newest, so 'b' is the oldest and goes first.
    expect(await store.complete('a', 'a2', 60_000)).toBe('completed');
    await store.complete('d', 'd', 60_000);
    expect(await store.claim('b', 'x', 1_000)).toBe('claimed');
    for (const id of ['a', 'c', 'd']) expect(await store.claim(id, 'x', 1_000)).toBe('completed');
  });

  test('refuses an unbounded or nonsensical configuration', () => {
    expect(() => new MemoryStore({ maxEvents: 0 })).toThrow(ConfigurationError);
    expect(() => new MemoryStore({ maxEvents: Number.POSITIVE_INFINITY })).toThrow(/bounds memory/);
    expect(() => new MemoryStore({ maxInProgress: -1 })).toThrow(ConfigurationError);
    expect(() => new MemoryStore({ now: 5 as never })).toThrow(/now/);
  });
});
