import type { IdempotencyStore, ResourceClaimResult } from 'service-webhooks/core';

/** The `ordering` operations, all four or none (`ORDERING_STORE_OPERATIONS`, repeated: no core import at run time). */
const OPERATIONS = ['claimResource', 'renewResource', 'releaseResource', 'completeOrdered'] as const;

/** What the ordering tests need from the suite that registers them. */
export interface OrderingConformanceContext {
  readonly it: (
    name: string,
    body: (store: IdempotencyStore, created: IdempotencyStore) => Promise<void>,
  ) => unknown;
  readonly freshId: (label?: string) => string;
  readonly token: () => string;
  readonly lease: number;
  readonly pastLease: number;
  readonly long: number;
  readonly sleep: (ms: number) => Promise<unknown>;
  readonly expectEqual: <T>(actual: T, expected: T, what: string) => void;
  readonly fail: (message: string) => never;
}

/** The key the core gives an event guarded by `ordering`: its resource, U+001F, the rest. */
const guardedKey = (resource: string, eventId: string) => `${resource}\u001f${eventId}`;

/**
 * Whether `store` has the ordering operations: all four (`true`), none (`false`); a store with some of
 * them fails, naming the missing ones.
 */
export function orderingOperationsOf(store: IdempotencyStore, fail: (message: string) => never): boolean {
  const present = OPERATIONS.filter((name) => typeof store[name] === 'function');
  if (present.length === 0) return false;
  if (present.length < OPERATIONS.length) {
    const missing = OPERATIONS.filter((name) => !present.includes(name));
    fail(
      `the store has ${present.join(', ')} but not ${missing.join(', ')}: the ordering operations are all four or none`,
    );
  }
  return true;
}

/**
 * The `ordering` operations' contract (see `IdempotencyStore.claimResource`), as tests registered by
 * `storeConformanceSuite` with `ordering: true`: the resource lease fenced like a claim, the watermark
 * advanced only with a completion, to the higher position, outliving leases for its own TTL.
 */
export function orderingConformance(context: OrderingConformanceContext): void {
  const { it, freshId, token, lease, pastLease, long, sleep, expectEqual, fail } = context;
  const ops = (store: IdempotencyStore) => {
    if (!orderingOperationsOf(store, fail)) {
      fail('the store has none of the ordering operations, but ordering: true was passed to the suite');
    }
    return store as Required<IdempotencyStore>;
  };
  const claimed = (found: ResourceClaimResult, watermark: number | undefined, what: string) => {
    expectEqual(found.outcome, 'claimed', what);
    if (found.outcome === 'claimed') expectEqual(found.watermark, watermark, `${what}: its watermark`);
  };
  const busy = (found: ResourceClaimResult, what: string) => {
    expectEqual(found.outcome, 'busy', what);
    if (found.outcome === 'busy' && !(found.retryAfterMs >= 1 && found.retryAfterMs <= long)) {
      fail(
        `${what}: retryAfterMs must be what is left of the holder's lease (1 to ${long}); got ${found.retryAfterMs}`,
      );
    }
  };

  it('ordering: claims a new resource once (no watermark yet); another token finds it busy, with the lease left', async (store) => {
    const s = ops(store);
    const resource = freshId('res');
    claimed(await s.claimResource(resource, token(), long), undefined, 'first claim of a resource');
    busy(await s.claimResource(resource, token(), long), 'second claim of the resource');
  });

  it('ordering: gives exactly one of 50 concurrent claims of one resource', async (store) => {
    const s = ops(store);
    const resource = freshId('res');
    const results = await Promise.all(
      Array.from({ length: 50 }, () => s.claimResource(resource, token(), long)),
    );
    expectEqual(
      results.filter((found) => found.outcome === 'claimed').length,
      1,
      'claims answered "claimed"',
    );
  });

  it("ordering: a resource lease ends after its lease, after a release by its holder, never by a stranger's release", async (store) => {
    const s = ops(store);
    const resource = freshId('res');
    const holder = token();
    claimed(await s.claimResource(resource, holder, lease), undefined, 'claim with a short lease');
    await sleep(pastLease);
    const next = token();
    claimed(await s.claimResource(resource, next, long), undefined, 'claim after the lease ended');
    await s.releaseResource(resource, holder);
    busy(await s.claimResource(resource, token(), long), 'claim after the old holder released');
    await s.releaseResource(resource, next);
    claimed(await s.claimResource(resource, token(), long), undefined, 'claim after the holder released');
    await s.releaseResource(freshId('res'), token()); // an absent resource: nothing to do, no error
  });

  it('ordering: renewResource keeps the holder past its lease, refuses a stranger, takes an ended or absent lease', async (store) => {
    const s = ops(store);
    const resource = freshId('res');
    const holder = token();
    claimed(await s.claimResource(resource, holder, lease), undefined, 'claim with a short lease');
    expectEqual(await s.renewResource(resource, holder, long), 'renewed', 'renew by the holder');
    expectEqual(await s.renewResource(resource, token(), long), 'lost', 'renew by a stranger');
    await sleep(pastLease);
    busy(await s.claimResource(resource, token(), long), 'claim after the original lease would have ended');
    const other = freshId('res');
    const late = token();
    claimed(await s.claimResource(other, late, lease), undefined, 'claim of a second resource');
    await sleep(pastLease);
    expectEqual(
      await s.renewResource(other, late, long),
      'renewed',
      'renew by the holder after its lease ended',
    );
    busy(await s.claimResource(other, token(), long), 'claim after the late renewal');
    const absent = freshId('res');
    const taker = token();
    expectEqual(await s.renewResource(absent, taker, long), 'renewed', 'renew of an absent resource');
    busy(await s.claimResource(absent, token(), long), 'claim after renewing an absent resource');
  });

  it('ordering: completeOrdered completes the event, sets the watermark and ends the lease, in one step', async (store) => {
    const s = ops(store);
    const resource = freshId('res');
    const holder = token();
    const key = guardedKey(resource, freshId());
    expectEqual(await s.claim(key, holder, long), 'claimed', 'claim of the event');
    claimed(await s.claimResource(resource, holder, long), undefined, 'claim of its resource');
    expectEqual(
      await s.completeOrdered(key, holder, long, resource, 3_400_000_001, long),
      'completed',
      'completeOrdered',
    );
    expectEqual(await s.claim(key, token(), long), 'completed', 'claim of the event afterwards');
    claimed(
      await s.claimResource(resource, token(), long),
      3_400_000_001,
      'claim of the resource afterwards (the lease ended)',
    );
  });

  it('ordering: the watermark is the highest position completed, and safe integers stay exact', async (store) => {
    const s = ops(store);
    const resource = freshId('res');
    for (const position of [20, 10, Number.MAX_SAFE_INTEGER - 1, 30]) {
      const owner = token();
      const key = guardedKey(resource, freshId());
      expectEqual(await s.claim(key, owner, long), 'claimed', `claim of the event at ${position}`);
      expectEqual(
        await s.completeOrdered(key, owner, long, resource, position, long),
        'completed',
        `completeOrdered at ${position}`,
      );
    }
    claimed(
      await s.claimResource(resource, token(), long),
      Number.MAX_SAFE_INTEGER - 1,
      'claim after four completions',
    );
  });

  it('ordering: a lost completeOrdered changes nothing (no advance, the lease stays)', async (store) => {
    const s = ops(store);
    const resource = freshId('res');
    const holder = token();
    const key = guardedKey(resource, freshId());
    expectEqual(await s.claim(key, holder, long), 'claimed', 'claim of the event');
    claimed(await s.claimResource(resource, holder, long), undefined, 'claim of the resource');
    const stranger = token();
    expectEqual(
      await s.completeOrdered(key, stranger, long, resource, 50, long),
      'lost',
      'completeOrdered by a stranger',
    );
    busy(await s.claimResource(resource, token(), long), 'claim of the resource after the lost completion');
    expectEqual(
      await s.completeOrdered(key, holder, long, resource, 40, long),
      'completed',
      'completeOrdered by the holder',
    );
    expectEqual(
      await s.completeOrdered(key, holder, long, resource, 60, long),
      'lost',
      'completeOrdered twice',
    );
    claimed(
      await s.claimResource(resource, token(), long),
      40,
      'claim after (the lost ones did not advance)',
    );
  });

  it("ordering: completeOrdered by one token leaves another token's resource lease alone", async (store) => {
    const s = ops(store);
    const resource = freshId('res');
    const holder = token();
    claimed(await s.claimResource(resource, holder, long), undefined, 'claim of the resource');
    const other = token();
    const key = guardedKey(resource, freshId());
    expectEqual(await s.claim(key, other, long), 'claimed', 'claim of an event by another token');
    expectEqual(
      await s.completeOrdered(key, other, long, resource, 7, long),
      'completed',
      'its completeOrdered',
    );
    busy(await s.claimResource(resource, token(), long), 'claim of the resource: still held');
    await s.releaseResource(resource, holder);
    claimed(await s.claimResource(resource, token(), long), 7, 'claim after the holder released');
  });

  it('ordering: the watermark outlives leases, lives its TTL from the advance, and an advance never shortens it', async (store) => {
    const s = ops(store);
    const resource = freshId('res');
    const first = token();
    const firstKey = guardedKey(resource, freshId());
    await s.claim(firstKey, first, long);
    expectEqual(
      await s.completeOrdered(firstKey, first, long, resource, 5, long),
      'completed',
      'completion with a long watermark TTL',
    );
    const second = token();
    const secondKey = guardedKey(resource, freshId());
    await s.claim(secondKey, second, long);
    expectEqual(
      await s.completeOrdered(secondKey, second, long, resource, 6, lease),
      'completed',
      'completion with a short watermark TTL',
    );
    await sleep(pastLease);
    claimed(
      await s.claimResource(resource, token(), lease),
      6,
      'claim after the short TTL (the long one stands)',
    );
    const short = freshId('res');
    const owner = token();
    const key = guardedKey(short, freshId());
    await s.claim(key, owner, long);
    expectEqual(
      await s.completeOrdered(key, owner, long, short, 9, lease),
      'completed',
      'completion with a short TTL',
    );
    claimed(await s.claimResource(short, token(), lease), 9, 'claim within the TTL');
    await sleep(pastLease);
    claimed(await s.claimResource(short, token(), long), undefined, 'claim after the TTL: forgotten');
  });

  it('ordering: resources and events are apart, and odd resources (braces, unicode, 200 characters) stay apart', async (store) => {
    const s = ops(store);
    const name = freshId('both');
    expectEqual(await s.claim(name, token(), long), 'claimed', 'claim of an event named like a resource');
    claimed(await s.claimResource(name, token(), long), undefined, 'claim of the resource of that name');
    const base = freshId('');
    const odd = [
      `${base}{u}`,
      `${base}}`,
      `{${base}`,
      `${base}é✓🚀`,
      `${base}:user:usr_1`,
      base.padEnd(200, '.'),
    ];
    for (const resource of odd) {
      const owner = token();
      const key = guardedKey(resource, freshId());
      claimed(
        await s.claimResource(resource, owner, long),
        undefined,
        `claim of ${JSON.stringify(resource)}`,
      );
      expectEqual(
        await s.claim(key, owner, long),
        'claimed',
        `claim of an event of ${JSON.stringify(resource)}`,
      );
      expectEqual(
        await s.completeOrdered(key, owner, long, resource, odd.indexOf(resource) + 1, long),
        'completed',
        `completeOrdered of ${JSON.stringify(resource)}`,
      );
    }
    for (const [index, resource] of odd.entries()) {
      claimed(
        await s.claimResource(resource, token(), long),
        index + 1,
        `watermark of ${JSON.stringify(resource)}`,
      );
    }
  });
}
