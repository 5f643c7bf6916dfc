import { LRUCache } from 'lru-cache';
import { ConfigurationError, StoreUnavailableError } from './errors.js';
import { LeaseTable } from './lease-table.js';
import type { ClaimResult, CompleteResult, IdempotencyStore } from './types.js';

/**
 * Options of {@link MemoryStore}.
 *
 * @example
 * ```ts
 * new MemoryStore({ maxEvents: 250_000 });
 * ```
 */
export interface MemoryStoreOptions {
  /**
   * How many handled event ids are remembered at most. When full, the oldest handled ids are forgotten
   * first, which shortens the replay window below `dedupTtlSeconds`: size it above the number of events
   * you receive per `dedupTtlSeconds` (about 120 bytes each).
   * @default 100_000
   */
  maxEvents?: number;
  /**
   * How many events may be in progress at once. In-progress claims are never evicted to make room; a
   * claim beyond this limit fails, and the sender is answered 503 so that it retries.
   * @default 10_000
   */
  maxInProgress?: number;
  /**
   * The clock, in milliseconds. Inject a fake one in tests.
   * @default performance.now
   */
  now?: () => number;
}

/** The store's three calls, answered synchronously. */
interface SyncCalls {
  claim(eventId: string, token: string, leaseMs: number): ClaimResult;
  complete(eventId: string, token: string, ttlMs: number): CompleteResult;
  release(eventId: string, token: string): void;
}

/** Where a MemoryStore keeps its synchronous calls; not exported from the package. */
export const SYNC_CALLS = Symbol('MemoryStore synchronous calls');

/**
 * The synchronous calls of `store` when it is a MemoryStore whose methods nobody replaced (a subclass
 * or a test spy may do anything, so it gets the promise and the deadline like any other store). The
 * core asks once, when the receiver is created: replace methods before passing the store in. The
 * core uses them to skip two promises and two deadline timers per delivery: a call that cannot wait
 * cannot hang, so the deadline has nothing to guard.
 */
export function syncCalls(store: IdempotencyStore): SyncCalls | undefined {
  const own = MemoryStore.prototype;
  return store instanceof MemoryStore &&
    store.claim === own.claim &&
    store.complete === own.complete &&
    store.release === own.release
    ? store[SYNC_CALLS]
    : undefined;
}

/**
 * The default store: remembers event ids in this process's memory, bounded, with TTLs and leases. Use
 * it for a single process; with several processes or machines each would remember only its own
 * deliveries, so use `RedisStore` (or your own shared store) there. Its memory is gone on restart: a
 * retry after a restart runs the handlers again.
 *
 * @example
 * ```ts
 * import { createWebhooks, MemoryStore } from 'service-webhooks';
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: new MemoryStore({ maxEvents: 50_000 }) });
 * ```
 */
export class MemoryStore implements IdempotencyStore {
  // Two structures so that in-progress claims can never be evicted by the completed records' bound.
  readonly #leases = new LeaseTable();
  /**
   * Handled event ids and when each stops counting (the clock's milliseconds, rounded up). The expiry
   * is the value rather than a TTL given to lru-cache: its TTL bookkeeping (two typed arrays sized for
   * `max`, a stale check and two array writes per call) cost a third of a delivery's deduplication in
   * the benchmark, and an expiry compared at lookup needs none of it.
   */
  readonly #completed: LRUCache<string, number>;
  readonly #maxInProgress: number;
  readonly #now: () => number;
  // Passed on every call: without one, lru-cache allocates an options object per call.
  readonly #peekOptions: LRUCache.PeekOptions<string, number, unknown> = {};
  readonly #setOptions: LRUCache.SetOptions<string, number, unknown> = {};

  constructor(options: MemoryStoreOptions = {}) {
    const maxEvents = options.maxEvents ?? 100_000;
    const maxInProgress = options.maxInProgress ?? 10_000;
    for (const [name, value] of [
      ['maxEvents', maxEvents],
      ['maxInProgress', maxInProgress],
    ] as const) {
      if (!Number.isSafeInteger(value) || value <= 0) {
        throw new ConfigurationError(
          `MemoryStore \`${name}\` must be a positive whole number (it bounds memory); got ${String(value)}.`,
        );
      }
    }
    if (options.now !== undefined && typeof options.now !== 'function') {
      throw new ConfigurationError('MemoryStore `now` must be a function returning milliseconds.');
    }
    const now = options.now ?? (() => performance.now());
    this.#now = now;
    this.#maxInProgress = maxInProgress;
    // Only `set` adds recency (`peek` does not), so the bound forgets the oldest handled ids first.
    this.#completed = new LRUCache<string, number>({ max: maxEvents });
  }

  async claim(eventId: string, token: string, leaseMs: number): Promise<ClaimResult> {
    return this[SYNC_CALLS].claim(eventId, token, leaseMs);
  }

  async complete(eventId: string, token: string, ttlMs: number): Promise<CompleteResult> {
    return this[SYNC_CALLS].complete(eventId, token, ttlMs);
  }

  async release(eventId: string, token: string): Promise<void> {
    this[SYNC_CALLS].release(eventId, token);
  }

  readonly [SYNC_CALLS]: SyncCalls = {
    claim: (eventId, token, leaseMs) => {
      const now = this.#now();
      const lease = this.#leases.get(eventId);
      if (lease) {
        if (lease.expiresAt > now) return 'in_progress';
        this.#leases.delete(eventId);
      }
      const handledUntil = this.#completed.peek(eventId, this.#peekOptions);
      if (handledUntil !== undefined && handledUntil >= now) return 'completed';
      if (this.#leases.size >= this.#maxInProgress) {
        this.#leases.dropExpired(now);
        if (this.#leases.size >= this.#maxInProgress) {
          throw new StoreUnavailableError(
            `MemoryStore holds ${this.#maxInProgress} events in progress (maxInProgress); refusing more until some finish.`,
          );
        }
      }
      this.#leases.set(eventId, { token, expiresAt: now + leaseMs });
      return 'claimed';
    },
    complete: (eventId, token, ttlMs) => {
      const lease = this.#leases.get(eventId);
      if (!lease || lease.token !== token) return 'lost';
      const now = this.#now();
      if (lease.expiresAt <= now) return 'lost';
      this.#leases.delete(eventId);
      // Whole milliseconds stay small integers, which V8 stores without a heap number per id.
      this.#completed.set(eventId, Math.ceil(now + ttlMs), this.#setOptions);
      return 'completed';
    },
    release: (eventId, token) => {
      if (this.#leases.get(eventId)?.token === token) this.#leases.delete(eventId);
    },
  };

  /** How many event ids are remembered as handled (expired ones may still count until touched). */
  get size(): number {
    return this.#completed.size;
  }
}
