/**
 * The store conformance suite tested on itself: a suite that passes every store proves nothing. It is
 * run against a small reference store with MemoryStore's rules, which must pass it whole, and against
 * copies of that store each broken in one way a real store gets wrong; each broken copy must fail at
 * least one of the suite's tests, and the one written for that rule.
 *
 * The suite takes the runner's `describe` and `test` as options, so here they are a shim that collects
 * its tests, which are then run directly: no nested vitest run.
 */
import type { ClaimResult, CompleteResult, IdempotencyStore, RenewResult } from 'service-webhooks';
import { type StoreConformanceOptions, storeConformanceSuite } from 'service-webhooks/testing';
import { describe, expect, test } from 'vitest';

type Flaw =
  /** Reads, yields, then writes: concurrent claims of one event all see it absent, and all win. */
  | 'non-atomic claim'
  /** Completes whoever asks, even while another attempt holds the event. */
  | 'complete ignores the token'
  /** Forgets the event on its owner's release even once it is completed. */
  | 'release undoes a completion'
  /** Extends a live claim for whoever asks, its owner or not. */
  | "renew renews someone else's claim";

interface Entry {
  state: 'claimed' | 'completed';
  token: string;
  /** A claim holds until this instant (exclusive); a completion counts until it (inclusive). */
  until: number;
}

/** MemoryStore's rules in a few lines, with `flaw` (if any) broken on purpose. */
class ReferenceStore implements IdempotencyStore {
  readonly #entries = new Map<string, Entry>();

  constructor(readonly flaw?: Flaw) {}

  #live(key: string, now: number): Entry | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    const live = entry.state === 'claimed' ? entry.until > now : entry.until >= now;
    return live ? entry : undefined;
  }

  async claim(key: string, token: string, leaseMs: number): Promise<ClaimResult> {
    const found = this.#live(key, performance.now());
    if (this.flaw === 'non-atomic claim') await new Promise((resolve) => setTimeout(resolve, 1));
    if (found) return found.state === 'claimed' ? 'in_progress' : 'completed';
    this.#entries.set(key, { state: 'claimed', token, until: performance.now() + leaseMs });
    return 'claimed';
  }

  async complete(key: string, token: string, ttlMs: number): Promise<CompleteResult> {
    const now = performance.now();
    const found = this.#live(key, now);
    if (found?.state === 'completed') return 'lost';
    if (found && found.token !== token && this.flaw !== 'complete ignores the token') return 'lost';
    this.#entries.set(key, { state: 'completed', token, until: now + ttlMs });
    return 'completed';
  }

  async release(key: string, token: string): Promise<void> {
    const entry = this.#entries.get(key);
    if (entry?.token !== token) return;
    if (entry.state === 'claimed' || this.flaw === 'release undoes a completion') this.#entries.delete(key);
  }

  async renew(key: string, token: string, leaseMs: number): Promise<RenewResult> {
    const now = performance.now();
    const found = this.#live(key, now);
    if (found?.state === 'completed') return 'lost';
    if (found && found.token !== token) {
      if (this.flaw !== "renew renews someone else's claim") return 'lost';
      found.until = now + leaseMs;
      return 'renewed';
    }
    this.#entries.set(key, { state: 'claimed', token, until: now + leaseMs });
    return 'renewed';
  }
}

interface CollectedTest {
  readonly name: string;
  readonly body: () => Promise<void>;
  readonly timeoutMs: number;
}

/** Register the suite on a shim of `describe` and `test` that keeps its tests instead of running them. */
function collectSuite(options: Omit<StoreConformanceOptions, 'describe' | 'test'>): CollectedTest[] {
  const collected: CollectedTest[] = [];
  const path: string[] = [];
  storeConformanceSuite({
    ...options,
    describe: (name, body) => {
      path.push(name);
      try {
        body();
      } finally {
        path.pop();
      }
    },
    test: (name, body, timeoutMs = 10_000) => {
      collected.push({ name: [...path, name].join(' > '), body, timeoutMs });
    },
  });
  return collected;
}

/** Run every test of the suite for `flaw`, all at once (each claims its own keys); answers the failed ones. */
async function failuresFor(flaw: Flaw | undefined): Promise<{ name: string; error: string }[]> {
  const tests = collectSuite({
    name: flaw ? `ReferenceStore (${flaw})` : 'ReferenceStore',
    createStore: () => new ReferenceStore(flaw),
    // Shorter than the suite's default, which waits for database clocks: this one is the process's own.
    shortLeaseMs: 100,
  });
  expect(tests.length).toBeGreaterThan(20);
  const outcomes = await Promise.all(
    tests.map(async ({ name, body, timeoutMs }) => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
      });
      try {
        await Promise.race([body(), timeout]);
        return undefined;
      } catch (error) {
        return { name, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  return outcomes.filter((outcome) => outcome !== undefined);
}

describe('storeConformanceSuite catches broken stores', () => {
  test('the reference store, unbroken, passes every test (else a failure below would prove nothing)', async () => {
    expect(await failuresFor(undefined)).toEqual([]);
  });

  const caughtBy: Record<Flaw, RegExp> = {
    'non-atomic claim': /gives exactly one of 100 concurrent claims of one event/,
    'complete ignores the token': /refuses to complete with a token that does not own the claim/,
    'release undoes a completion': /never lets a release undo a completion/,
    "renew renews someone else's claim": /refuses a renewal by a stranger and changes nothing/,
  };

  for (const [flaw, expected] of Object.entries(caughtBy) as [Flaw, RegExp][]) {
    test(`${flaw}: at least one test fails, among them ${expected.source}`, async () => {
      const failures = await failuresFor(flaw);
      expect(failures.length, `no test of the suite failed for a store with "${flaw}"`).toBeGreaterThan(0);
      expect(failures.map((failure) => failure.name)).toContainEqual(expect.stringMatching(expected));
      // Failing by the suite's own checks (StoreConformanceError), not by a crash or a timeout.
      const failure = failures.find((candidate) => expected.test(candidate.name))!;
      expect(failure.error).toMatch(/^StoreConformanceError: /);
    });
  }
});
