/**
 * A zoo of subtly broken watermark stores: the `ordering` operations as a store author might write
 * them wrong, on a store that is otherwise right. The events are a real MemoryStore's (on the
 * checker's clock); the resources live in a small in-memory "backend" whose every request is a round
 * trip (a macrotask, as network I/O is), so calls overlap as they do against a real database.
 *
 * Used by watermark-zoo.test.ts, to show that checkStore (and storeConformanceSuite) catch each.
 */
import {
  type ClaimResult,
  type CompleteResult,
  type IdempotencyStore,
  MemoryStore,
  type RenewResult,
  type ResourceClaimResult,
} from 'service-webhooks';

/** Each a realistic bug; {@link WatermarkFlaw} is derived from this one list. */
export const WATERMARK_FLAWS = [
  /**
   * completeOrdered completes the event (and ends the lease) in one request and advances the
   * watermark in a second: between the two, another event of the resource finds it free and the old
   * watermark, so an older event runs after a newer one completed.
   */
  'advance not atomic with completion',
  /** The advance compares the position with the watermark row's expiry column, not its position. */
  'comparison on the wrong field',
  /** The watermark is written with the event's TTL (the argument before), not watermarkTtlMs. */
  'watermark expires too early',
] as const;

export type WatermarkFlaw = (typeof WATERMARK_FLAWS)[number];

interface ResourceRow {
  holder: string | undefined;
  leaseUntil: number;
  position: number | undefined;
  until: number;
}

const roundTrip = () => new Promise<void>((resolve) => setImmediate(resolve));

export class WatermarkZooStore implements IdempotencyStore {
  readonly #events: MemoryStore;
  readonly #rows = new Map<string, ResourceRow>();
  readonly #now: () => number;
  readonly #flaw: WatermarkFlaw | undefined;

  constructor(options: { flaw?: WatermarkFlaw | undefined; now?: (() => number) | undefined } = {}) {
    this.#now = options.now ?? (() => performance.now());
    this.#events = new MemoryStore({ now: this.#now });
    this.#flaw = options.flaw;
  }

  claim(key: string, token: string, leaseMs: number): Promise<ClaimResult> {
    return this.#events.claim(key, token, leaseMs);
  }
  complete(key: string, token: string, ttlMs: number): Promise<CompleteResult> {
    return this.#events.complete(key, token, ttlMs);
  }
  release(key: string, token: string): Promise<void> {
    return this.#events.release(key, token);
  }
  renew(key: string, token: string, leaseMs: number): Promise<RenewResult> {
    return this.#events.renew(key, token, leaseMs);
  }

  async claimResource(resource: string, token: string, leaseMs: number): Promise<ResourceClaimResult> {
    await roundTrip();
    const row = this.#row(resource);
    const now = this.#now();
    if (row.holder !== undefined && row.holder !== token && row.leaseUntil > now) {
      return { outcome: 'busy', retryAfterMs: Math.max(1, Math.ceil(row.leaseUntil - now)) };
    }
    row.holder = token;
    row.leaseUntil = now + leaseMs;
    return { outcome: 'claimed', watermark: row.until >= now ? row.position : undefined };
  }

  async renewResource(resource: string, token: string, leaseMs: number): Promise<RenewResult> {
    await roundTrip();
    const row = this.#row(resource);
    const now = this.#now();
    if (row.holder !== undefined && row.holder !== token && row.leaseUntil > now) return 'lost';
    row.holder = token;
    row.leaseUntil = now + leaseMs;
    return 'renewed';
  }

  async releaseResource(resource: string, token: string): Promise<void> {
    await roundTrip();
    const row = this.#row(resource);
    if (row.holder === token) row.holder = undefined;
  }

  async completeOrdered(
    key: string,
    token: string,
    ttlMs: number,
    resource: string,
    position: number,
    watermarkTtlMs: number,
  ): Promise<CompleteResult> {
    await roundTrip();
    const result = await this.#events.complete(key, token, ttlMs);
    if (result !== 'completed') return result;
    const row = this.#row(resource);
    if (this.#flaw === 'advance not atomic with completion') {
      if (row.holder === token) row.holder = undefined;
      await roundTrip();
      await roundTrip();
    }
    const now = this.#now();
    const live = row.until >= now;
    // The right comparison is with the watermark's position; the flaw compares with its expiry.
    const compared = this.#flaw === 'comparison on the wrong field' ? row.until : row.position;
    if (!live || row.position === undefined || position > (compared ?? 0)) row.position = position;
    const ttl = this.#flaw === 'watermark expires too early' ? ttlMs : watermarkTtlMs;
    row.until = Math.max(live ? row.until : 0, now + ttl);
    if (row.holder === token) row.holder = undefined;
    return 'completed';
  }

  #row(resource: string): ResourceRow {
    let row = this.#rows.get(resource);
    if (!row) {
      row = { holder: undefined, leaseUntil: 0, position: undefined, until: 0 };
      this.#rows.set(resource, row);
    }
    return row;
  }
}
