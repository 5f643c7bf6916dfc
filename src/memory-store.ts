import { LRUCache } from 'lru-cache';
// The core by its package name: the root's bundle holds this store, not a second copy of the core, so
// its errors are the core's classes. The symbol is a registered one, the same in both files.
import {
  type ClaimResult,
  type CompleteResult,
  ConfigurationError,
  type IdempotencyStore,
  type RenewResult,
  type ResourceClaimResult,
  StoreUnavailableError,
  type SynchronousCalls,
} from 'service-webhooks/core';
import { LeaseTable } from './lease-table.js';
import { SYNCHRONOUS_CALLS } from './synchronous-calls-key.js';

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
   * you receive per `dedupTtlSeconds` (about 135 bytes each, taken as ids arrive: a new store holds
   * no room in advance).
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
  readonly #records: MemoryRecords;
  /** Made on the first ordering call: a store never used with `ordering` holds none of it. */
  #resources: MemoryResources | undefined;
  readonly #maxEvents: number;
  readonly #maxInProgress: number;
  readonly #now: () => number;

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
    const now = options.now ?? performanceNow;
    this.#records = new MemoryRecords(maxEvents, maxInProgress, now);
    this.#maxEvents = maxEvents;
    this.#maxInProgress = maxInProgress;
    this.#now = now;
  }

  async claim(key: string, token: string, leaseMs: number): Promise<ClaimResult> {
    return this.#records.claim(key, token, leaseMs);
  }

  async complete(key: string, token: string, ttlMs: number): Promise<CompleteResult> {
    return this.#records.complete(key, token, ttlMs);
  }

  async release(key: string, token: string): Promise<void> {
    this.#records.release(key, token);
  }

  async renew(key: string, token: string, leaseMs: number): Promise<RenewResult> {
    return this.#records.renew(key, token, leaseMs);
  }

  // The `ordering` option's operations (see IdempotencyStore.claimResource). Resources are leased apart
  // from events (`maxInProgress` bounds each) and their watermarks are bounded as handled ids are
  // (`maxEvents`, the least recently advanced forgotten first).

  async claimResource(resource: string, token: string, leaseMs: number): Promise<ResourceClaimResult> {
    return this.#ordering().claim(resource, token, leaseMs);
  }

  async renewResource(resource: string, token: string, leaseMs: number): Promise<RenewResult> {
    return this.#ordering().renew(resource, token, leaseMs);
  }

  async releaseResource(resource: string, token: string): Promise<void> {
    this.#ordering().release(resource, token);
  }

  async completeOrdered(
    key: string,
    token: string,
    ttlMs: number,
    resource: string,
    position: number,
    watermarkTtlMs: number,
  ): Promise<CompleteResult> {
    // One synchronous step: nothing can run between the completion and the advance.
    const result = this.#records.complete(key, token, ttlMs);
    if (result === 'completed') this.#ordering().advance(resource, token, position, watermarkTtlMs);
    return result;
  }

  #ordering(): MemoryResources {
    this.#resources ??= new MemoryResources(this.#maxEvents, this.#maxInProgress, this.#now);
    return this.#resources;
  }

  /**
   * The same calls without a promise, for the receiver (see `SYNCHRONOUS_CALLS`). Offered only
   * while this store's methods are its own: a subclass or a test spy that replaced one may do anything,
   * so it gets the promise and the deadline like any other store.
   */
  [SYNCHRONOUS_CALLS](): SynchronousCalls | undefined {
    const own = MemoryStore.prototype;
    return this.claim === own.claim &&
      this.complete === own.complete &&
      this.release === own.release &&
      this.renew === own.renew
      ? this.#records
      : undefined;
  }

  /** How many event ids are remembered as handled (expired ones may still count until touched). */
  get size(): number {
    return this.#records.size;
  }
}

/** A resource's watermark: the highest position completed, and until when it counts (the clock's ms). */
interface Watermark {
  readonly position: number;
  readonly until: number;
}

/**
 * The resources of a {@link MemoryStore}: their leases (never evicted, bounded by `maxInProgress` as
 * events' are) and their watermarks (bounded by `maxEvents`, the least recently advanced forgotten
 * first: a forgotten watermark lets an older event of that resource run, as a forgotten id lets a
 * retry run again).
 */
class MemoryResources {
  readonly #leases = new LeaseTable();
  readonly #watermarks: LRUCache<string, Watermark>;
  readonly #maxInProgress: number;
  readonly #now: () => number;

  constructor(maxResources: number, maxInProgress: number, now: () => number) {
    this.#watermarks = new LRUCache<string, Watermark>({ maxSize: maxResources, sizeCalculation: () => 1 });
    this.#maxInProgress = maxInProgress;
    this.#now = now;
  }

  claim(resource: string, token: string, leaseMs: number): ResourceClaimResult {
    const now = this.#now();
    const lease = this.#leases.get(resource);
    if (lease && lease.token !== token && lease.expiresAt > now) {
      return { outcome: 'busy', retryAfterMs: Math.max(1, Math.ceil(lease.expiresAt - now)) };
    }
    if (!lease) this.#makeRoom(now);
    this.#leases.set(resource, token, now + leaseMs);
    return { outcome: 'claimed', watermark: this.#live(resource, now)?.position };
  }

  renew(resource: string, token: string, leaseMs: number): RenewResult {
    const now = this.#now();
    const lease = this.#leases.get(resource);
    if (lease && lease.token !== token && lease.expiresAt > now) return 'lost';
    if (!lease) this.#makeRoom(now);
    this.#leases.set(resource, token, now + leaseMs);
    return 'renewed';
  }

  release(resource: string, token: string): void {
    if (this.#leases.get(resource)?.token === token) this.#leases.delete(resource);
  }

  /** The watermark becomes the higher of the two, counted at least `watermarkTtlMs` from now; `token`'s lease ends. */
  advance(resource: string, token: string, position: number, watermarkTtlMs: number): void {
    const now = this.#now();
    const old = this.#live(resource, now);
    const until = Math.ceil(now + watermarkTtlMs);
    this.#watermarks.set(resource, {
      position: old === undefined || position > old.position ? position : old.position,
      until: old === undefined || until > old.until ? until : old.until,
    });
    this.release(resource, token);
  }

  #live(resource: string, now: number): Watermark | undefined {
    const watermark = this.#watermarks.peek(resource);
    return watermark !== undefined && watermark.until >= now ? watermark : undefined;
  }

  #makeRoom(now: number): void {
    if (this.#leases.size < this.#maxInProgress) return;
    this.#leases.dropExpired(now);
    if (this.#leases.size >= this.#maxInProgress) {
      throw new StoreUnavailableError(
        `MemoryStore holds ${this.#maxInProgress} resources in progress (maxInProgress); refusing more until some finish.`,
      );
    }
  }
}

/** The default clock: one function for every store, so compiled code that calls it outlives a store. */
const performanceNow = (): number => performance.now();

/**
 * What a {@link MemoryStore} remembers, and its calls answered synchronously. Its calls are methods of
 * one class rather than closures made per store: V8 ties optimized code to the functions it calls, so a
 * receiver's compiled delivery path built around one store's closures was thrown away with that store,
 * and recompiled for the next (a third of the core's cost in a harness that makes a receiver per
 * segment, and the first deliveries of every receiver made later in a process).
 */
class MemoryRecords implements SynchronousCalls {
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
  // Passed on every call: without one, lru-cache allocates an options object per call. Every id
  // weighs 1 against `maxSize` (see the constructor).
  readonly #peekOptions: LRUCache.PeekOptions<string, number, unknown> = {};
  readonly #hasOptions: LRUCache.HasOptions<string, number, unknown> = {};
  readonly #setOptions: LRUCache.SetOptions<string, number, unknown> = { size: 1 };

  constructor(maxEvents: number, maxInProgress: number, now: () => number) {
    this.#now = now;
    this.#maxInProgress = maxInProgress;
    // Only `set` adds recency (`peek` does not), so the bound forgets the oldest handled ids first.
    // The bound is `maxSize` with every id weighing 1, not `max`: for `max`, lru-cache allocates its
    // index arrays for that many entries up front (about 2.7 MiB and 12-16 ms for 100 000, half of a
    // Lambda cold start), while under `maxSize` alone they are ordinary arrays that grow with use.
    // Eviction is the same (least recently set first, one out per one in once full) and nothing is
    // ever copied into a bigger cache, so no delivery pauses while the store grows.
    this.#completed = new LRUCache<string, number>({ maxSize: maxEvents });
  }

  claim(key: string, token: string, leaseMs: number): ClaimResult {
    const now = this.#now();
    const lease = this.#leases.get(key);
    if (lease) {
      if (lease.expiresAt > now) return 'in_progress';
      this.#leases.delete(key);
    }
    if (this.#completedLive(key, now)) return 'completed';
    this.#makeRoom(now);
    this.#leases.set(key, token, now + leaseMs);
    return 'claimed';
  }

  complete(key: string, token: string, ttlMs: number): CompleteResult {
    const now = this.#now();
    const lease = this.#leases.get(key);
    // A lease and a live completion never coexist (a lease is only written where no completion is
    // live, and completing drops the lease), so a lease found spares the completion lookup.
    if (lease) {
      if (lease.token !== token && lease.expiresAt > now) return 'lost';
      this.#leases.delete(key);
    } else if (this.#completedLive(key, now)) {
      return 'lost';
    }
    // Whole milliseconds stay small integers, which V8 stores without a heap number per key.
    this.#completed.set(key, Math.ceil(now + ttlMs), this.#setOptions);
    return 'completed';
  }

  release(key: string, token: string): void {
    if (this.#leases.get(key)?.token === token) this.#leases.delete(key);
  }

  renew(key: string, token: string, leaseMs: number): RenewResult {
    const now = this.#now();
    const lease = this.#leases.get(key);
    if (lease) {
      if (lease.token !== token && lease.expiresAt > now) return 'lost';
    } else {
      if (this.#completedLive(key, now)) return 'lost';
      // Taking an absent key back adds a lease, so it counts against the bound as a claim does.
      this.#makeRoom(now);
    }
    this.#leases.set(key, token, now + leaseMs);
    return 'renewed';
  }

  /** How many event ids are remembered as handled (expired ones may still count until touched). */
  get size(): number {
    return this.#completed.size;
  }

  /**
   * Whether `key` is recorded as handled and its TTL has not ended (its last millisecond counts).
   * `has` first: most keys looked up are new events, and lru-cache's `peek` asks diagnostics_channel
   * whether anyone traces it (a tracing channel's five channels, on every call) where `has` asks only
   * its metrics channel. Neither adds recency, and the cache has no TTL of its own, so `has` answers
   * whether `peek` would find a value.
   */
  #completedLive(key: string, now: number): boolean {
    const completed = this.#completed;
    if (!completed.has(key, this.#hasOptions)) return false;
    const handledUntil = completed.peek(key, this.#peekOptions);
    return handledUntil !== undefined && handledUntil >= now;
  }

  /** Make sure one more lease fits under `maxInProgress`, dropping expired ones if needed. */
  #makeRoom(now: number): void {
    if (this.#leases.size < this.#maxInProgress) return;
    this.#leases.dropExpired(now);
    if (this.#leases.size >= this.#maxInProgress) {
      throw new StoreUnavailableError(
        `MemoryStore holds ${this.#maxInProgress} events in progress (maxInProgress); refusing more until some finish.`,
      );
    }
  }
}
