import type { ClaimResult, IdempotencyStore } from 'service-webhooks';

/**
 * How {@link storeConformanceSuite} runs: the store under test and the test runner's functions.
 * vitest, jest, mocha and `node:test` all fit.
 */
export interface StoreConformanceOptions {
  /** Name of the describe block, such as `'RedisStore (cluster)'`. */
  name: string;
  /** A store for one test. Called once per test; ids never repeat between tests, so a shared backend is fine. */
  createStore: () => IdempotencyStore | Promise<IdempotencyStore>;
  /** Called after each test with the store it used. */
  teardown?: (store: IdempotencyStore) => void | Promise<void>;
  /** The runner's `describe`. */
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
  return {
    claim: (id, token, leaseMs) => within('claim', () => store.claim(id, token, leaseMs)),
    complete: (id, token, ttlMs) => within('complete', () => store.complete(id, token, ttlMs)),
    release: (id, token) => within('release', () => store.release(id, token)),
  };
}

const LONG = 60_000;

/** Ids that stores are known to mangle: separators, hash-tag braces, unicode, the longest allowed. */
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
  'x'.repeat(255),
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
  const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
  let sequence = 0;
  const freshId = (label = 'evt') => `${label}-${run}-${++sequence}`;
  const token = () => crypto.randomUUID();

  const it = (name: string, body: (store: IdempotencyStore) => Promise<void>, timeoutMs = 10_000) =>
    options.test(
      name,
      async () => {
        const store = await options.createStore();
        try {
          await body(timed(store, deadline));
        } finally {
          await options.teardown?.(store);
        }
      },
      timeoutMs,
    );

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

    it('answers lost, and writes nothing, when completing an event never claimed', async (store) => {
      const id = freshId();
      expectEqual(await store.complete(id, token(), LONG), 'lost', 'complete on an absent key');
      expectEqual(await store.claim(id, token(), LONG), 'claimed', 'claim afterwards');
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
      await sleep(lease * 2 + 100);
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
    });

    it('forgets a completed event after its TTL', async (store) => {
      const id = freshId();
      const owner = token();
      await store.claim(id, owner, LONG);
      expectEqual(await store.complete(id, owner, lease), 'completed', 'complete with a short TTL');
      expectEqual(await store.claim(id, token(), LONG), 'completed', 'claim within the TTL');
      await sleep(lease * 2 + 100);
      expectEqual(await store.claim(id, token(), LONG), 'claimed', 'claim after the TTL');
    });

    it('keeps odd ids apart and intact (separators, braces, unicode, 255 characters)', async (store) => {
      // The unique part comes first so that truncation to the 255-character id limit keeps ids distinct.
      const ids = ODD_IDS.map((odd) => (freshId('') + odd).slice(0, 255));
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
      // Ids that a lossy key encoding would map to one record must stay separate.
      const base = freshId('k');
      for (const id of [base, `{${base}}`, `${base}{}`, `{}${base}`, `${base}:`, `${base}_`]) {
        expectEqual(await store.claim(id, token(), LONG), 'claimed', `claim of ${JSON.stringify(id)}`);
      }
    });
  });
}
