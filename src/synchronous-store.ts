import { SYNCHRONOUS_CALLS } from './synchronous-calls-key.js';
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

export { SYNCHRONOUS_CALLS };

interface OffersSynchronousCalls {
  [SYNCHRONOUS_CALLS]?: () => SynchronousCalls | undefined;
}

/** The synchronous calls `store` offers, if any. */
export function synchronousCallsOf(store: IdempotencyStore): SynchronousCalls | undefined {
  return (store as IdempotencyStore & OffersSynchronousCalls)[SYNCHRONOUS_CALLS]?.();
}
