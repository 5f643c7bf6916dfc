/** One event in progress: who holds it, and until when (the store's clock, in milliseconds). */
export interface Lease {
  readonly token: string;
  readonly expiresAt: number;
}

/** The lease held while it is the only one: a record the table reuses, so holding one allocates nothing. */
interface SoleLease {
  key: string | undefined;
  token: string;
  expiresAt: number;
}

/**
 * The leases of the events in progress, by store key, for {@link MemoryStore}.
 *
 * Why two shapes: a receiver's lease table holds one lease for a moment and is empty again after
 * nearly every delivery (claim, run, complete), even under load, because a delivery whose handlers
 * finish within their microtasks completes before the server reads the next request. That one lease
 * lives in a record reused from delivery to delivery, so a claim allocates neither a Map nor a lease
 * object (a fresh Map and a lease per delivery were about 270 of the core's 3,300 bytes allocated per
 * delivery in the shared harness's heap profile). A Map holds the leases only while two or more are
 * held at once, and is dropped when it empties rather than emptied: V8 shrinks and compacts a Map that
 * empties by allocating new backing tables, and for a Map old enough to be in the old generation that
 * was an old-space allocation per delivery (1.8% of the node adapter's CPU under load in a `perf`
 * profile), while a fresh Map dies young.
 */
export class LeaseTable {
  readonly #sole: SoleLease = { key: undefined, token: '', expiresAt: 0 };
  #many: Map<string, Lease> | undefined;

  /** How many events are in progress (expired leases count until dropped). */
  get size(): number {
    if (this.#many !== undefined) return this.#many.size;
    return this.#sole.key === undefined ? 0 : 1;
  }

  /**
   * The lease of `key`. Read it before the next `set` or `delete`: the sole lease is a record the table
   * reuses, so what it answers changes with the table.
   */
  get(key: string): Lease | undefined {
    if (this.#many !== undefined) return this.#many.get(key);
    return this.#sole.key === key ? this.#sole : undefined;
  }

  set(key: string, token: string, expiresAt: number): void {
    const many = this.#many;
    if (many !== undefined) {
      many.set(key, { token, expiresAt });
      return;
    }
    const sole = this.#sole;
    if (sole.key === undefined || sole.key === key) {
      sole.key = key;
      sole.token = token;
      sole.expiresAt = expiresAt;
      return;
    }
    // A second event in progress at once: both move to a Map until it empties again.
    this.#many = new Map<string, Lease>([
      [sole.key, { token: sole.token, expiresAt: sole.expiresAt }],
      [key, { token, expiresAt }],
    ]);
    sole.key = undefined;
  }

  delete(key: string): void {
    const many = this.#many;
    if (many === undefined) {
      if (this.#sole.key === key) this.#sole.key = undefined;
      return;
    }
    many.delete(key);
    if (many.size === 0) this.#many = undefined;
  }

  /** Forget the leases that expired by `now`. */
  dropExpired(now: number): void {
    const many = this.#many;
    if (many === undefined) {
      if (this.#sole.key !== undefined && this.#sole.expiresAt <= now) this.#sole.key = undefined;
      return;
    }
    for (const [key, lease] of many) {
      if (lease.expiresAt <= now) this.delete(key);
    }
  }
}
