import type { ClaimResult, CompleteResult, IdempotencyStore, RenewResult } from './types.js';

/**
 * A store's calls answered without waiting. A store that can offer them (the MemoryStore) spares the
 * receiver a promise and a deadline timer per call: a call that cannot wait cannot hang.
 */
export interface SynchronousCalls {
  claim(key: string, token: string, leaseMs: number): ClaimResult;
  complete(key: string, token: string, ttlMs: number): CompleteResult;
  release(key: string, token: string): void;
  renew(key: string, token: string, leaseMs: number): RenewResult;
}

/**
 * The method by which a store offers {@link SynchronousCalls}. It answers `undefined` when the offer
 * does not hold (a subclass or a test spy replaced a method), and is asked once, when a receiver is
 * created. Internal to the package: stores of users keep the promise contract. A registered symbol, so
 * that the root's `MemoryStore`, built into another file than the core (`service-webhooks/core`),
 * offers its calls under the same key without the core exporting it.
 */
export const SYNCHRONOUS_CALLS: unique symbol = Symbol.for('service-webhooks.synchronousCalls');

interface OffersSynchronousCalls {
  [SYNCHRONOUS_CALLS]?: () => SynchronousCalls | undefined;
}

/** The synchronous calls `store` offers, if any. */
export function synchronousCallsOf(store: IdempotencyStore): SynchronousCalls | undefined {
  return (store as IdempotencyStore & OffersSynchronousCalls)[SYNCHRONOUS_CALLS]?.();
}
