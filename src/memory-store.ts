import { LRUCache } from 'lru-cache';
import { ConfigurationError, StoreUnavailableError } from './errors.js';
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
   * you receive per `dedupTtlSeconds` (about 160 bytes each).
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

interface Lease {
  readonly token: string;
  readonly expiresAt: number;
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
  readonly #leases = new Map<string, Lease>();
  readonly #completed: LRUCache<string, true>;
  readonly #maxInProgress: number;
  readonly #now: () => number;
  // Options objects for the cache, refilled per call: it reads them during the call and keeps nothing.
  readonly #setOptions: LRUCache.SetOptions<string, true, unknown> = {};
  readonly #hasOptions: LRUCache.HasOptions<string, true, unknown> = {};

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
    this.#completed = new LRUCache<string, true>({
      max: maxEvents,
      // Read on every check rather than cached behind a timer, so an injected clock is exact.
      ttlResolution: 0,
      perf: { now },
      updateAgeOnGet: false,
      updateAgeOnHas: false,
    });
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
      // `has` neither refreshes recency nor age, so eviction stays oldest-handled-first.
      if (this.#completed.has(eventId, this.#hasOptions)) return 'completed';
      if (this.#leases.size >= this.#maxInProgress) {
        this.#dropExpiredLeases(now);
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
      // Handing the cache our clock reading spares it a second one.
      const options = this.#setOptions;
      options.ttl = ttlMs;
      options.start = now;
      this.#completed.set(eventId, true, options);
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

  #dropExpiredLeases(now: number): void {
    for (const [eventId, lease] of this.#leases) {
      if (lease.expiresAt <= now) this.#leases.delete(eventId);
    }
  }
}
