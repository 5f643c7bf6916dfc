import type { ClaimResult, CompleteResult, IdempotencyStore, RenewResult } from 'service-webhooks/core';
import { orderingConformance, orderingOperationsOf } from './ordering-conformance.js';

/**
 * How {@link storeConformanceSuite} runs: the store under test and the test runner's functions.
 * vitest, jest, mocha and `node:test` all fit.
 */
export interface StoreConformanceOptions {
  /** Name of the describe block, such as `'RedisStore (cluster)'`. */
  name: string;
  /**
   * A store for one test. Called once per test; keys never repeat between tests, so a shared backend
   * is fine.
   */
  createStore: () => IdempotencyStore | Promise<IdempotencyStore>;
  /** Called after each test with the store it used. */
  teardown?: (store: IdempotencyStore) => void | Promise<void>;
  /**
   * The runner's `describe`. Each test makes its store with `createStore` and uses ids of its own, so
   * the tests may run side by side: pass vitest's `describe.concurrent` where the server answers
   * concurrent calls within the suite's call deadline (most of the suite's time is spent waiting for
   * leases and TTLs to end, which then overlaps).
   */
  describe: (name: string, body: () => void) => unknown;
  /** The runner's `test` (or `it`); the third argument is a timeout in ms. */
  test: (name: string, body: () => Promise<void>, timeoutMs?: number) => unknown;
  /**
   * Longest a single store call may take. The core gives every call `storeTimeoutMs` (2 s by default),
   * so a conforming store answers well within that.
   * @default 1_000
   */
  callDeadlineMs?: number;
  /**
   * Lease used by the expiry tests. Raise it for stores whose clock is coarse (a database's `now()`).
   * @default 300
   */
  shortLeaseMs?: number;
  /**
   * Whether the store implements the optional `renew`. Left `true`, a store without `renew` fails (so a
   * forgotten method is not mistaken for a choice) and the renewal tests run; `false` declares a store
   * without it, and the suite then checks that it has none. Without `renew`, a handler that outlives
   * the receiver's `leaseSeconds` may run twice.
   * @default true
   */
  renews?: boolean;
  /**
   * Whether the store implements the optional ordering operations (`claimResource`, `renewResource`,
   * `releaseResource`, `completeOrdered`), which the receiver's `ordering` option needs: `true` runs
   * their tests. Left out, the suite only checks that the store has all four or none.
   * @default false
   */
  ordering?: boolean;
}

/** A store call that broke a rule of the contract. */
export class StoreConformanceError extends Error {
  override name = 'StoreConformanceError';
}

function expectEqual<T>(actual: T, expected: T, what: string): void {
  if (actual !== expected) {
    throw new StoreConformanceError(
      `${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`,
    );
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Wrap every store call so that one slower than the deadline fails the test, naming the call. */
function timed(store: IdempotencyStore, deadlineMs: number): IdempotencyStore {
  const within = async <T>(call: string, run: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const result = await run();
    const took = performance.now() - started;
    if (took > deadlineMs) {
      throw new StoreConformanceError(
        `${call} took ${Math.round(took)} ms; every call must answer within ${deadlineMs} ms`,
      );
    }
    return result;
  };
  const wrapped: IdempotencyStore = {
    claim: (key, token, leaseMs) => within('claim', () => store.claim(key, token, leaseMs)),
    complete: (key, token, ttlMs) => within('complete', () => store.complete(key, token, ttlMs)),
    release: (key, token) => within('release', () => store.release(key, token)),
  };
  // Mirror the store exactly: a renew added here would hide a store without one from the checks.
  const renew = store.renew;
  if (typeof renew === 'function') {
    wrapped.renew = (key, token, leaseMs) => within('renew', () => renew.call(store, key, token, leaseMs));
  }
  const { claimResource, renewResource, releaseResource, completeOrdered } = store;
  if (typeof claimResource === 'function')
    wrapped.claimResource = (resource, token, leaseMs) =>
      within('claimResource', () => claimResource.call(store, resource, token, leaseMs));
  if (typeof renewResource === 'function')
    wrapped.renewResource = (resource, token, leaseMs) =>
      within('renewResource', () => renewResource.call(store, resource, token, leaseMs));
  if (typeof releaseResource === 'function')
    wrapped.releaseResource = (resource, token) =>
      within('releaseResource', () => releaseResource.call(store, resource, token));
  if (typeof completeOrdered === 'function')
    wrapped.completeOrdered = (...args) =>
      within('completeOrdered', () => completeOrdered.apply(store, args));
  return wrapped;
}

const MISSING_RENEW =
  'the store has no renew method: implement renew, or pass renews: false to storeConformanceSuite ' +
  '(without it, a handler that outlives leaseSeconds may run twice)';

/** `store.renew`, failing the test with what to do when the store has none. */
function renewOf(store: IdempotencyStore, key: string, token: string, leaseMs: number): Promise<RenewResult> {
  if (typeof store.renew !== 'function') throw new StoreConformanceError(MISSING_RENEW);
  return store.renew(key, token, leaseMs);
}

const LONG = 60_000;

/** The longest key the core builds: the receiver's dedup scope and the event id. */
const MAX_KEY_LENGTH = 400;

/** Keys that stores are known to mangle: separators, hash-tag braces, unicode, the longest allowed. */
const ODD_IDS = [
  'evt:with:colons',
  'evt_{braces}',
  '{',
  '}',
  '{}',
  '}{',
  'evt_{a}{b}',
  'événement-✓-🚀',
  'evt with spaces',
  'x'.repeat(MAX_KEY_LENGTH),
];

/**
 * The executable form of the `IdempotencyStore` contract. Run it against every store (built-in or
 * your own) with your test runner: it registers one describe block of tests.
 *
 * @example
 * ```ts
 * import { describe, test } from 'vitest';
 * import { storeConformanceSuite } from 'service-webhooks/testing';
 * import { MyStore } from './my-store.js';
 *
 * storeConformanceSuite({ name: 'MyStore', createStore: () => new MyStore(db), describe, test });
 * ```
 */
export function storeConformanceSuite(options: StoreConformanceOptions): void {
  const deadline = options.callDeadlineMs ?? 1_000;
  const lease = options.shortLeaseMs ?? 300;
  const renews = options.renews ?? true;
  // Long enough past the lease for a coarse clock (a database's) to have seen it end.
  const pastLease = lease * 2 + 100;
  const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
  let sequence = 0;
  const freshId = (label = 'evt') => `${label}-${run}-${++sequence}`;
  const token = () => crypto.randomUUID();

  /** `body` gets the store wrapped in the call deadline, and the store as created, for its shape. */
  const it = (
    name: string,
    body: (store: IdempotencyStore, created: IdempotencyStore) => Promise<void>,
    timeoutMs = 10_000,
  ) =>
    options.test(
      name,
      async () => {
        const store = await options.createStore();
        try {
          await body(timed(store, deadline), store);
        } finally {
          await options.teardown?.(store);
        }
      },
      timeoutMs,
    );

  /**
   * The old owner's `call` after its lease ended, raced against 50 strangers' claims, issued in an order
   * that puts the owner anywhere among them. Exactly one side may win.
   */
  const raceAfterExpiry = async (
    store: IdempotencyStore,
    call: (key: string, owner: string) => Promise<CompleteResult | RenewResult>,
    won: 'completed' | 'renewed',
  ) => {
    const id = freshId();
    const owner = token();
    expectEqual(await store.claim(id, owner, lease), 'claimed', 'first claim');
    await sleep(pastLease);
    const ownerAt = Math.floor(Math.random() * 51);
    const strangers: Promise<ClaimResult>[] = [];
    let mine: Promise<CompleteResult | RenewResult> | undefined;
    for (let i = 0; i <= 50; i++) {
      if (i === ownerAt) mine = call(id, owner);
      else strangers.push(store.claim(id, token(), LONG));
    }
    const [result, claims] = await Promise.all([mine!, Promise.all(strangers)]);
    const claimed = claims.filter((claim) => claim === 'claimed').length;
    if (result === won) {
      expectEqual(claimed, 0, `strangers answered "claimed" although the old owner's call answered "${won}"`);
      expectEqual(
        await store.claim(id, token(), LONG),
        won === 'completed' ? 'completed' : 'in_progress',
        `claim after the old owner's call answered "${won}"`,
      );
    } else {
      expectEqual(result, 'lost', "the old owner's call (when it did not win)");
      expectEqual(claimed, 1, 'strangers answered "claimed" after the old owner lost');
      expectEqual(await store.claim(id, token(), LONG), 'in_progress', 'claim after the race');
    }
  };

  options.describe(`${options.name} conforms to IdempotencyStore`, () => {
    it('claims a new event once; a second claim finds it in progress', async (store) => {
      const id = freshId();
      expectEqual(await store.claim(id, token(), LONG), 'claimed', 'first claim');
      expectEqual(await store.claim(id, token(), LONG), 'in_progress', 'second claim');
    });

    it('gives exactly one of 100 concurrent claims of one event', async (store) => {
      const id = freshId();
      const results = await Promise.all(Array.from({ length: 100 }, () => store.claim(id, token(), LONG)));
      expectEqual(results.filter((r) => r === 'claimed').length, 1, 'claims answered "claimed"');
      expectEqual(results.filter((r) => r === 'in_progress').length, 99, 'claims answered "in_progress"');
    });

    it('claims 100 different events concurrently, each once', async (store) => {
      const results = await Promise.all(
        Array.from({ length: 100 }, () => store.claim(freshId(), token(), LONG)),
      );
      expectEqual(results.filter((r) => r === 'claimed').length, 100, 'claims answered "claimed"');
    });

    it('completes with the owning token; later claims find it completed', async (store) => {
      const id = freshId();
      const owner = token();
      await store.claim(id, owner, LONG);
      expectEqual(await store.complete(id, owner, LONG), 'completed', 'complete by owner');
      expectEqual(await store.claim(id, token(), LONG), 'completed', 'claim after completion');
      expectEqual(await store.complete(id, owner, LONG), 'lost', 'completing twice');
    });

    it('refuses to complete with a token that does not own the claim', async (store) => {
      const id = freshId();
      const owner = token();
      await store.claim(id, owner, LONG);
      expectEqual(await store.complete(id, token(), LONG), 'lost', 'complete by a stranger');
      expectEqual(await store.claim(id, token(), LONG), 'in_progress', 'claim after a stranger tried');
      expectEqual(await store.complete(id, owner, LONG), 'completed', 'complete by the owner afterwards');
    });

    it('records a completion of an event nobody holds (never claimed); later claims find it completed', async (store) => {
      const id = freshId();
      const first = token();
      expectEqual(await store.complete(id, first, LONG), 'completed', 'complete on an absent key');
      expectEqual(await store.claim(id, token(), LONG), 'completed', 'claim after completing an absent key');
      expectEqual(await store.complete(id, first, LONG), 'lost', 'completing an absent key twice');
      expectEqual(await store.complete(id, token(), LONG), 'lost', 'complete by another token afterwards');
    });

    it('completes after the lease ended when nobody took the event over; later claims find it completed', async (store) => {
      const id = freshId();
      const owner = token();
      // A second event whose ended lease is completed by another attempt: an ended lease holds nothing.
      const other = freshId();
      expectEqual(await store.claim(id, owner, lease), 'claimed', 'first claim');
      expectEqual(await store.claim(other, token(), lease), 'claimed', 'first claim of the second event');
      await sleep(pastLease);
      expectEqual(
        await store.complete(id, owner, LONG),
        'completed',
        'complete by the owner after its lease ended',
      );
      expectEqual(await store.claim(id, token(), LONG), 'completed', 'claim after the late completion');
      expectEqual(await store.complete(id, owner, LONG), 'lost', 'completing twice after the lease ended');
      expectEqual(
        await store.complete(other, token(), LONG),
        'completed',
        'complete by another attempt over a lease that ended',
      );
      expectEqual(
        await store.claim(other, token(), LONG),
        'completed',
        'claim of the second event afterwards',
      );
    });

    it('after the lease ended, the old owner completes while 50 attempts claim: exactly one side wins', async (store) => {
      await raceAfterExpiry(store, (id, owner) => store.complete(id, owner, LONG), 'completed');
    });

    it('releases with the owning token, so the next delivery can claim', async (store) => {
      const id = freshId();
      const owner = token();
      await store.claim(id, owner, LONG);
      await store.release(id, owner);
      expectEqual(await store.claim(id, token(), LONG), 'claimed', 'claim after release');
    });

    it('ignores a release by a token that does not own the claim', async (store) => {
      const id = freshId();
      await store.claim(id, token(), LONG);
      await store.release(id, token());
      expectEqual(await store.claim(id, token(), LONG), 'in_progress', 'claim after a stranger released');
      await store.release(freshId(), token()); // an absent key: nothing to do, no error
    });

    it('never lets a release undo a completion', async (store) => {
      const id = freshId();
      const owner = token();
      await store.claim(id, owner, LONG);
      await store.complete(id, owner, LONG);
      await store.release(id, owner);
      expectEqual(
        await store.claim(id, token(), LONG),
        'completed',
        'claim after release of a completed event',
      );
    });

    it('lets a claim expire after its lease; the old owner is fenced off', async (store) => {
      const id = freshId();
      const crashed = token();
      expectEqual(await store.claim(id, crashed, lease), 'claimed', 'first claim');
      await sleep(pastLease);
      const next = token();
      expectEqual(await store.claim(id, next, LONG), 'claimed', 'claim after the lease expired');
      expectEqual(await store.complete(id, crashed, LONG), 'lost', 'complete by the expired owner');
      await store.release(id, crashed);
      expectEqual(
        await store.claim(id, token(), LONG),
        'in_progress',
        'claim after the expired owner released',
      );
      expectEqual(await store.complete(id, next, LONG), 'completed', 'complete by the new owner');
      expectEqual(
        await store.claim(id, token(), LONG),
        'completed',
        "claim after the new owner's completion",
      );
    });

    it('forgets a completed event after its TTL; it can then be claimed or completed afresh', async (store) => {
      const id = freshId();
      const owner = token();
      const other = freshId();
      await store.claim(id, owner, LONG);
      expectEqual(await store.complete(id, owner, lease), 'completed', 'complete with a short TTL');
      expectEqual(
        await store.complete(other, token(), lease),
        'completed',
        'complete of a second event with a short TTL',
      );
      expectEqual(await store.claim(id, token(), LONG), 'completed', 'claim within the TTL');
      await sleep(pastLease);
      expectEqual(await store.claim(id, token(), LONG), 'claimed', 'claim after the TTL');
      expectEqual(await store.complete(other, token(), LONG), 'completed', 'complete after the TTL');
      expectEqual(await store.claim(other, token(), LONG), 'completed', 'claim after completing afresh');
    });

    it(`keeps odd keys apart and intact (separators, braces, unicode, ${MAX_KEY_LENGTH} characters)`, async (store) => {
      // The unique part comes first so that truncation to the longest key keeps keys distinct.
      const ids = ODD_IDS.map((odd) => (freshId('') + odd).slice(0, MAX_KEY_LENGTH));
      const owners = ids.map(() => token());
      const claims: ClaimResult[] = await Promise.all(ids.map((id, i) => store.claim(id, owners[i]!, LONG)));
      for (const [i, result] of claims.entries())
        expectEqual(result, 'claimed', `claim of ${JSON.stringify(ids[i])}`);
      for (const [i, id] of ids.entries()) {
        expectEqual(
          await store.complete(id, owners[i]!, LONG),
          'completed',
          `complete of ${JSON.stringify(id)}`,
        );
        expectEqual(
          await store.claim(id, token(), LONG),
          'completed',
          `claim after completion of ${JSON.stringify(id)}`,
        );
      }
      // Keys that a lossy key encoding would map to one record must stay separate.
      const base = freshId('k');
      for (const id of [base, `{${base}}`, `${base}{}`, `{}${base}`, `${base}:`, `${base}_`]) {
        expectEqual(await store.claim(id, token(), LONG), 'claimed', `claim of ${JSON.stringify(id)}`);
      }
    });

    it(`takes keys of ${MAX_KEY_LENGTH} characters, kept apart by their last character`, async (store) => {
      // A store that truncates or hashes a prefix of the key would merge these two.
      const stem = freshId('long').padEnd(MAX_KEY_LENGTH - 1, '.');
      const [first, second] = [`${stem}a`, `${stem}b`];
      const [firstOwner, secondOwner] = [token(), token()];
      expectEqual(await store.claim(first, firstOwner, LONG), 'claimed', 'claim of the first long key');
      expectEqual(await store.claim(second, secondOwner, LONG), 'claimed', 'claim of the second long key');
      expectEqual(
        await store.complete(first, firstOwner, LONG),
        'completed',
        'complete of the first long key',
      );
      expectEqual(await store.claim(second, token(), LONG), 'in_progress', 'claim of the second long key');
      if (renews) {
        expectEqual(
          await renewOf(store, second, secondOwner, LONG),
          'renewed',
          'renew of the second long key',
        );
      }
      await store.release(second, secondOwner);
      expectEqual(
        await store.claim(second, token(), LONG),
        'claimed',
        'claim of the second long key after release',
      );
      expectEqual(await store.claim(first, token(), LONG), 'completed', 'claim of the first long key');
    });

    const fail = (message: string): never => {
      throw new StoreConformanceError(message);
    };
    if (options.ordering === true) {
      orderingConformance({
        it,
        freshId,
        token,
        lease,
        pastLease,
        long: LONG,
        sleep,
        expectEqual,
        fail,
      });
    } else {
      it('has the ordering operations all four or none (pass ordering: true to test them)', async (_store, created) => {
        orderingOperationsOf(created, fail);
      });
    }

    if (!renews) {
      it('has no renew method, as renews: false declares', async (_store, created) => {
        expectEqual(
          typeof created.renew,
          'undefined',
          'typeof store.renew with renews: false (drop renews: false so that the suite checks renew)',
        );
      });
      return;
    }

    it('implements renew (or pass renews: false)', async (_store, created) => {
      if (typeof created.renew !== 'function') throw new StoreConformanceError(MISSING_RENEW);
    });

    it('renews an event nobody holds (never claimed): the token then holds it', async (store) => {
      const id = freshId();
      const owner = token();
      expectEqual(await renewOf(store, id, owner, LONG), 'renewed', 'renew on an absent key');
      expectEqual(await store.claim(id, token(), LONG), 'in_progress', 'claim after the renewal');
      expectEqual(await store.complete(id, token(), LONG), 'lost', 'complete by a stranger');
      expectEqual(await store.complete(id, owner, LONG), 'completed', 'complete by the renewing token');
    });

    it('renewal by the owner keeps the event past its original lease', async (store) => {
      const id = freshId();
      const owner = token();
      expectEqual(await store.claim(id, owner, lease), 'claimed', 'claim with a short lease');
      expectEqual(await renewOf(store, id, owner, LONG), 'renewed', 'renew by the owner');
      await sleep(pastLease);
      expectEqual(
        await store.claim(id, token(), LONG),
        'in_progress',
        'claim after the original lease would have ended',
      );
      expectEqual(await store.complete(id, owner, LONG), 'completed', 'complete by the owner');
    });

    it('refuses a renewal by a stranger and changes nothing', async (store) => {
      const id = freshId();
      const owner = token();
      const stranger = token();
      expectEqual(await store.claim(id, owner, lease), 'claimed', 'claim with a short lease');
      expectEqual(await renewOf(store, id, stranger, LONG), 'lost', 'renew by a stranger');
      expectEqual(await store.complete(id, stranger, LONG), 'lost', 'complete by the stranger who renewed');
      expectEqual(await store.claim(id, token(), LONG), 'in_progress', "claim after the stranger's renewal");
      await sleep(pastLease);
      const next = token();
      expectEqual(
        await store.claim(id, next, LONG),
        'claimed',
        "claim after the owner's short lease ended (the stranger's renewal must not extend it)",
      );
      expectEqual(await store.complete(id, next, LONG), 'completed', 'complete by the new owner');
    });

    it('renews after its lease ended when nobody took the event over; others then find it in progress', async (store) => {
      const id = freshId();
      const owner = token();
      expectEqual(await store.claim(id, owner, lease), 'claimed', 'claim with a short lease');
      await sleep(pastLease);
      expectEqual(
        await renewOf(store, id, owner, LONG),
        'renewed',
        'renew by the owner after its lease ended',
      );
      expectEqual(await store.claim(id, token(), LONG), 'in_progress', 'claim after the late renewal');
      expectEqual(await store.complete(id, token(), LONG), 'lost', 'complete by a stranger');
      expectEqual(await store.complete(id, owner, LONG), 'completed', 'complete by the owner');
    });

    it('refuses a renewal after another attempt took the event over; the new owner keeps it', async (store) => {
      const id = freshId();
      const old = token();
      expectEqual(await store.claim(id, old, lease), 'claimed', 'first claim');
      await sleep(pastLease);
      const next = token();
      expectEqual(await store.claim(id, next, LONG), 'claimed', 'claim after the lease ended');
      expectEqual(await renewOf(store, id, old, LONG), 'lost', 'renew by the old owner after the takeover');
      expectEqual(await store.claim(id, token(), LONG), 'in_progress', "claim after the old owner's renewal");
      expectEqual(await store.complete(id, old, LONG), 'lost', 'complete by the old owner');
      expectEqual(await store.complete(id, next, LONG), 'completed', 'complete by the new owner');
    });

    it('refuses to renew a completed event; it stays completed', async (store) => {
      const id = freshId();
      const owner = token();
      await store.claim(id, owner, LONG);
      expectEqual(await store.complete(id, owner, LONG), 'completed', 'complete by the owner');
      expectEqual(await renewOf(store, id, owner, LONG), 'lost', 'renew by the owner after completing');
      expectEqual(
        await renewOf(store, id, token(), LONG),
        'lost',
        'renew by a stranger of a completed event',
      );
      expectEqual(await store.claim(id, token(), LONG), 'completed', 'claim after the refused renewals');
    });

    it('after the lease ended, the old owner renews while 50 attempts claim: exactly one side wins', async (store) => {
      await raceAfterExpiry(store, (id, owner) => renewOf(store, id, owner, LONG), 'renewed');
    });
  });
}
