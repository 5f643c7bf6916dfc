import { withDeadline } from './deadline.js';
import { syncCalls } from './memory-store.js';
import type { TimeoutQueue } from './timeout-queue.js';
import type { ClaimResult, CompleteResult, IdempotencyStore, RenewResult } from './types.js';

/** A value now, or a promise of it when the step had to wait. */
export type Eventual<T> = T | Promise<T>;

/** An event's key in the store: one, or one per secret while a secret is rotated. */
export type DedupKey = string | readonly string[];

/**
 * A receiver's view of its idempotency store, chosen once at construction: event ids become the keys
 * of the receiver's dedup scope (`prefix + id`), every call runs under `storeTimeoutMs`, and the
 * unmodified MemoryStore is called synchronously (a call that cannot wait cannot hang, so it needs
 * neither a promise nor a deadline timer: two of each saved per delivery).
 *
 * While a secret is rotated the scope has one key per secret. They are claimed one after another in a
 * fixed order, so of two concurrent copies the one that loses the first key stops there; an event
 * found completed under any key is recorded under all of them, so that dropping the old secret later
 * cannot make a retry look new.
 */
export class ScopedStore {
  readonly #store: IdempotencyStore;
  readonly #deadlines: TimeoutQueue;
  readonly #memory: ReturnType<typeof syncCalls>;
  #prefixes: readonly string[] | undefined;
  readonly #resolving: Promise<readonly string[]> | undefined;
  /** Whether the store can renew a lease; without it a handler that outlives the lease may run twice. */
  readonly renews: boolean;

  constructor(store: IdempotencyStore, prefixes: Eventual<readonly string[]>, deadlines: TimeoutQueue) {
    this.#store = store;
    this.#deadlines = deadlines;
    this.#memory = syncCalls(store);
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

  /** The scope's key prefixes, once known (see {@link dedupPrefixes}). */
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
   * Claim the key (every key of a rotating scope). `rememberMs` is how long a completion found under
   * one key is copied to the others. May throw synchronously (a full MemoryStore).
   */
  claim(key: DedupKey, token: string, leaseMs: number, rememberMs: number): Eventual<ClaimResult> {
    if (typeof key !== 'string') return this.#claimEach(key, token, leaseMs, rememberMs);
    const memory = this.#memory;
    if (memory) return memory.claim(key, token, leaseMs);
    return this.#call((store) => store.claim(key, token, leaseMs), 'store.claim');
  }

  complete(key: DedupKey, token: string, ttlMs: number): Eventual<CompleteResult> {
    if (typeof key === 'string') {
      const memory = this.#memory;
      if (memory) return memory.complete(key, token, ttlMs);
      return this.#call((store) => store.complete(key, token, ttlMs), 'store.complete');
    }
    return Promise.all(
      key.map((one) => this.#call((store) => store.complete(one, token, ttlMs), 'store.complete')),
    ).then((results) => (results.every((result) => result === 'completed') ? 'completed' : 'lost'));
  }

  release(key: DedupKey, token: string): Eventual<void> {
    if (typeof key === 'string') {
      const memory = this.#memory;
      if (memory) return memory.release(key, token);
      return this.#call((store) => store.release(key, token), 'store.release');
    }
    return this.#releaseAll(key, token);
  }

  /** Extend the claim; answers `'lost'` when another attempt holds the event (or one of its keys). */
  renew(key: DedupKey, token: string, leaseMs: number): Promise<RenewResult> {
    return Promise.all(
      (typeof key === 'string' ? [key] : key).map((one) =>
        this.#call((store) => store.renew!(one, token, leaseMs), 'store.renew'),
      ),
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
        const state = await this.#call((store) => store.claim(key, token, leaseMs), 'store.claim');
        if (state === 'claimed') {
          held.push(key);
          continue;
        }
        // The event is handled or being handled under another key: give back (or record) what we hold.
        // A failure here is harmless: a held key's lease ends by itself.
        await Promise.all(
          held.map((heldKey) =>
            state === 'completed'
              ? this.#call((store) => store.complete(heldKey, token, rememberMs), 'store.complete')
              : this.#call((store) => store.release(heldKey, token), 'store.release'),
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
    await Promise.all(keys.map((key) => this.#call((store) => store.release(key, token), 'store.release')));
  }

  /** A store call within the deadline; a store that throws instead of rejecting is treated alike. */
  #call<T>(call: (store: IdempotencyStore) => Promise<T>, what: string): Promise<T> {
    let pending: Promise<T>;
    try {
      pending = call(this.#store);
    } catch (error) {
      return Promise.reject(error);
    }
    return withDeadline(pending, this.#deadlines, what);
  }
}
