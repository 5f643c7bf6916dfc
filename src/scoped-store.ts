import { withDeadline } from './deadline.js';
import type { ResourceBusyError } from './errors.js';
import { type Eventual, settled } from './eventual.js';
import { type SynchronousCalls, synchronousCallsOf } from './synchronous-store.js';
import type { TimeoutQueue } from './timeout-queue.js';
import type { ClaimResult, CompleteResult, IdempotencyStore, RenewResult } from './types.js';

/** An event's key in the store: one, or one per secret while a secret is rotated. */
export type DedupKey = string | readonly string[];

/** Marks the keys of inbox runs, apart from the door's keys of the same scope (see `runKeyFor`). */
const RUN_MARK = '!';

/** What marks an inbox run's key ahead of the scope's key: the run mark, with the replay id if any. */
export function runMark(replayId: string | undefined): string {
  return replayId === undefined ? RUN_MARK : `${RUN_MARK}${replayId}${RUN_MARK}`;
}

/**
 * What a run's claim found: the store's answer, or with the `ordering` option also a stale event
 * (recorded as handled without running) or a resource held by another event.
 */
export type RunClaim = ClaimResult | 'stale' | ResourceBusyError;

/**
 * The store as a run sees it: the receiver's {@link ScopedStore}, or for an event guarded by the
 * `ordering` option a view of it that takes the event's resource along with the event.
 */
export interface RunStore {
  readonly waits: boolean;
  readonly renews: boolean;
  /** Whether the run is guarded by `ordering`: such a run never fails open (the guard needs the store). */
  readonly ordered: boolean;
  readonly prefixes: Promise<readonly string[]>;
  keyFor(eventId: string): DedupKey | undefined;
  runKeyFor(eventId: string, replayId: string | undefined): DedupKey | undefined;
  claim(key: DedupKey, token: string, leaseMs: number, rememberMs: number): Eventual<RunClaim>;
  complete(key: DedupKey, token: string, ttlMs: number): Eventual<CompleteResult>;
  release(key: DedupKey, token: string): Eventual<void>;
  renew(key: DedupKey, token: string, leaseMs: number): Promise<RenewResult>;
}

/** A store's four calls as the receiver makes them: answered now, or a promise under a deadline. */
type StoreCalls = {
  [Name in keyof SynchronousCalls]: (
    ...args: Parameters<SynchronousCalls[Name]>
  ) => Eventual<ReturnType<SynchronousCalls[Name]>>;
};

/**
 * A store's calls under `storeTimeoutMs`: a store that hangs is treated as down, and one that throws
 * instead of rejecting is treated alike.
 */
class DeadlinedCalls implements StoreCalls {
  readonly #store: IdempotencyStore;
  readonly #deadlines: TimeoutQueue;

  constructor(store: IdempotencyStore, deadlines: TimeoutQueue) {
    this.#store = store;
    this.#deadlines = deadlines;
  }

  claim(key: string, token: string, leaseMs: number): Promise<ClaimResult> {
    return this.#within(
      settled(() => this.#store.claim(key, token, leaseMs)),
      'store.claim',
    );
  }

  complete(key: string, token: string, ttlMs: number): Promise<CompleteResult> {
    return this.#within(
      settled(() => this.#store.complete(key, token, ttlMs)),
      'store.complete',
    );
  }

  release(key: string, token: string): Promise<void> {
    return this.#within(
      settled(() => this.#store.release(key, token)),
      'store.release',
    );
  }

  renew(key: string, token: string, leaseMs: number): Promise<RenewResult> {
    return this.#within(
      settled(() => this.#store.renew!(key, token, leaseMs)),
      'store.renew',
    );
  }

  #within<T>(pending: Eventual<T>, what: string): Promise<T> {
    return withDeadline(pending, this.#deadlines, what);
  }
}

/**
 * A receiver's view of its idempotency store, chosen once at construction: event ids become the keys
 * of the receiver's dedup scope (`prefix + id`), and the calls are the store's own synchronous ones
 * when it offers them (the MemoryStore), else its promises under `storeTimeoutMs`.
 *
 * While a secret is rotated the scope has one key per secret. They are claimed one after another in a
 * fixed order, so of two concurrent copies the one that loses the first key stops there; an event
 * found completed under any key is recorded under all of them, so that dropping the old secret later
 * cannot make a retry look new.
 */
export class ScopedStore implements RunStore {
  readonly #calls: StoreCalls;
  /** The store itself and the deadline of its calls, for the `ordering` option's view (`OrderedScope`). */
  readonly store: IdempotencyStore;
  readonly deadlines: TimeoutQueue;
  readonly ordered = false;
  /** The promise-returning calls, for the rotation's sequence of claims (rare: no fast path needed). */
  readonly #deadlined: DeadlinedCalls;
  #prefixes: readonly string[] | undefined;
  readonly #resolving: Promise<readonly string[]> | undefined;
  /** Whether the store can renew a lease; without it a handler that outlives the lease may run twice. */
  readonly renews: boolean;
  /**
   * Whether its calls wait on something outside the process (a store of promises, not the memory
   * store's synchronous calls): only those are worth a step in a delivery's trace.
   */
  readonly waits: boolean;

  constructor(store: IdempotencyStore, prefixes: Eventual<readonly string[]>, deadlines: TimeoutQueue) {
    this.store = store;
    this.deadlines = deadlines;
    this.#deadlined = new DeadlinedCalls(store, deadlines);
    const synchronous = synchronousCallsOf(store);
    this.#calls = synchronous ?? this.#deadlined;
    this.waits = synchronous === undefined;
    this.renews = typeof store.renew === 'function';
    if (prefixes instanceof Promise) {
      // Web Crypto derives the scope asynchronously; deliveries wait for it once.
      this.#resolving = prefixes.then((resolved) => {
        this.#prefixes = resolved;
        return resolved;
      });
    } else {
      this.#prefixes = prefixes;
    }
  }

  /** The scope's key prefixes, once known (see `dedupPrefixes`). */
  get prefixes(): Promise<readonly string[]> {
    return this.#resolving ?? Promise.resolve(this.#prefixes!);
  }

  /**
   * The store key of an event: the scope's prefix and the id, or one key per prefix while a secret is
   * rotated; `undefined` while the scope is still being derived (Web Crypto). Built once per delivery
   * and passed to every call: a key built anew per call is a new cons string, which every Map and
   * lru-cache operation has to flatten, hash and compare again (measured: about 1.5 µs a delivery).
   */
  keyFor(eventId: string): DedupKey | undefined {
    const prefixes = this.#prefixes;
    if (prefixes === undefined) return undefined;
    return prefixes.length === 1 ? prefixes[0] + eventId : prefixes.map((prefix) => prefix + eventId);
  }

  /**
   * The key of an inbox run of an event, apart from the door's key: the door remembers that an event
   * was queued, a run that its handlers completed. A replay is a run of its own, keyed by its id. Scope
   * prefixes never begin with the mark (a namespace cannot hold it; derived prefixes begin with `#`),
   * so no door key can equal a run key, but for unscoped receivers (`namespace: ''`) whose event ids
   * begin with `!`.
   */
  runKeyFor(eventId: string, replayId: string | undefined): DedupKey | undefined {
    const key = this.keyFor(eventId);
    if (key === undefined) return undefined;
    const mark = runMark(replayId);
    return typeof key === 'string' ? mark + key : key.map((one) => mark + one);
  }

  // The three calls below answer a store's synchronous throw (a full MemoryStore) as a rejection, here
  // once, so that the engine joins every step with one `chain` and needs no try/catch of its own.

  /**
   * Claim the key (every key of a rotating scope). `rememberMs` is how long a completion found under
   * one key is copied to the others.
   */
  claim(key: DedupKey, token: string, leaseMs: number, rememberMs: number): Eventual<ClaimResult> {
    if (typeof key !== 'string') return this.#claimEach(key, token, leaseMs, rememberMs);
    try {
      return this.#calls.claim(key, token, leaseMs);
    } catch (cause) {
      return Promise.reject(cause);
    }
  }

  complete(key: DedupKey, token: string, ttlMs: number): Eventual<CompleteResult> {
    if (typeof key !== 'string') {
      return Promise.all(key.map((one) => this.#deadlined.complete(one, token, ttlMs))).then((results) =>
        results.every((result) => result === 'completed') ? 'completed' : 'lost',
      );
    }
    try {
      return this.#calls.complete(key, token, ttlMs);
    } catch (cause) {
      return Promise.reject(cause);
    }
  }

  release(key: DedupKey, token: string): Eventual<void> {
    if (typeof key !== 'string') return this.#releaseAll(key, token);
    try {
      return this.#calls.release(key, token);
    } catch (cause) {
      return Promise.reject(cause);
    }
  }

  /** Extend the claim; answers `'lost'` when another attempt holds the event (or one of its keys). */
  renew(key: DedupKey, token: string, leaseMs: number): Promise<RenewResult> {
    return Promise.all(
      (typeof key === 'string' ? [key] : key).map((one) => this.#deadlined.renew(one, token, leaseMs)),
    ).then((results) => (results.every((result) => result === 'renewed') ? 'renewed' : 'lost'));
  }

  async #claimEach(
    keys: readonly string[],
    token: string,
    leaseMs: number,
    rememberMs: number,
  ): Promise<ClaimResult> {
    const held: string[] = [];
    try {
      for (const key of keys) {
        const state = await this.#deadlined.claim(key, token, leaseMs);
        if (state === 'claimed') {
          held.push(key);
          continue;
        }
        // The event is handled or being handled under another key: give back (or record) what we hold.
        // A failure here is harmless: a held key's lease ends by itself.
        await Promise.all(
          held.map((heldKey) =>
            state === 'completed'
              ? this.#deadlined.complete(heldKey, token, rememberMs)
              : this.#deadlined.release(heldKey, token),
          ),
        ).catch(() => {});
        return state;
      }
      return 'claimed';
    } catch (error) {
      void this.#releaseAll(held, token).catch(() => {});
      throw error;
    }
  }

  async #releaseAll(keys: readonly string[], token: string): Promise<void> {
    await Promise.all(keys.map((key) => this.#deadlined.release(key, token)));
  }
}
