/** One event in progress: who holds it, and until when (the store's clock, in milliseconds). */
export interface Lease {
  readonly token: string;
  readonly expiresAt: number;
}

/**
 * The leases of the events in progress, by event id, for {@link MemoryStore}: a Map that is replaced,
 * not emptied, when its last lease goes.
 *
 * Why: a receiver's lease table holds one lease for a moment and is empty again after nearly every
 * delivery (claim, run, complete). V8 shrinks a Map that falls below a quarter full by allocating a
 * new backing table, and compacts deleted slots by allocating another; for a Map that had lived long
 * enough to reach the old generation, that meant an old-space allocation per delivery, page faults
 * and major-GC work: 1.8% of the node adapter's CPU under load in a `perf` profile. A fresh Map is a
 * young-generation allocation that dies young, which a scavenge does not even visit.
 */
export class LeaseTable {
  #leases = new Map<string, Lease>();

  /** How many events are in progress (expired leases count until dropped). */
  get size(): number {
    return this.#leases.size;
  }

  get(eventId: string): Lease | undefined {
    return this.#leases.get(eventId);
  }

  set(eventId: string, lease: Lease): void {
    this.#leases.set(eventId, lease);
  }

  delete(eventId: string): void {
    const leases = this.#leases;
    if (leases.size === 1 && leases.has(eventId)) this.#leases = new Map();
    else leases.delete(eventId);
  }

  /** Forget the leases that expired by `now`. */
  dropExpired(now: number): void {
    for (const [eventId, lease] of this.#leases) {
      if (lease.expiresAt <= now) this.delete(eventId);
    }
  }
}
