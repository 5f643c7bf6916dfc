import { type IdempotencyStore, MemoryStore } from 'service-webhooks';

/** A real MemoryStore that records every call, so tests can prove when the store was (not) touched. */
export class SpyStore implements IdempotencyStore {
  readonly calls: string[] = [];
  constructor(readonly inner: IdempotencyStore = new MemoryStore()) {}
  claim(eventId: string, token: string, leaseMs: number) {
    this.calls.push(`claim ${eventId}`);
    return this.inner.claim(eventId, token, leaseMs);
  }
  complete(eventId: string, token: string, ttlMs: number) {
    this.calls.push(`complete ${eventId}`);
    return this.inner.complete(eventId, token, ttlMs);
  }
  release(eventId: string, token: string) {
    this.calls.push(`release ${eventId}`);
    return this.inner.release(eventId, token);
  }
  renew(eventId: string, token: string, leaseMs: number) {
    this.calls.push(`renew ${eventId}`);
    if (!this.inner.renew) throw new Error('the inner store cannot renew');
    return this.inner.renew(eventId, token, leaseMs);
  }
}

/** A store whose chosen methods fail (reject) or hang (never settle). */
export class FaultyStore extends SpyStore {
  constructor(readonly faults: Partial<Record<'claim' | 'complete' | 'release', 'reject' | 'hang'>>) {
    super();
  }
  #fault<T>(method: 'claim' | 'complete' | 'release', call: () => Promise<T>): Promise<T> {
    const fault = this.faults[method];
    if (fault === 'reject') return Promise.reject(new Error(`${method} failed: connection refused`));
    if (fault === 'hang') return new Promise<T>(() => {});
    return call();
  }
  override claim(eventId: string, token: string, leaseMs: number) {
    return this.#fault('claim', () => super.claim(eventId, token, leaseMs));
  }
  override complete(eventId: string, token: string, ttlMs: number) {
    return this.#fault('complete', () => super.complete(eventId, token, ttlMs));
  }
  override release(eventId: string, token: string) {
    return this.#fault('release', () => super.release(eventId, token));
  }
}

/** A SpyStore with the `ordering` option's operations, on a real MemoryStore, each call recorded. */
export class OrderedSpyStore extends SpyStore {
  readonly memory: MemoryStore;
  constructor(memory = new MemoryStore()) {
    super(memory);
    this.memory = memory;
  }
  claimResource(resource: string, token: string, leaseMs: number) {
    this.calls.push(`claimResource ${resource}`);
    return this.memory.claimResource(resource, token, leaseMs);
  }
  renewResource(resource: string, token: string, leaseMs: number) {
    this.calls.push(`renewResource ${resource}`);
    return this.memory.renewResource(resource, token, leaseMs);
  }
  releaseResource(resource: string, token: string) {
    this.calls.push(`releaseResource ${resource}`);
    return this.memory.releaseResource(resource, token);
  }
  completeOrdered(
    key: string,
    token: string,
    ttlMs: number,
    resource: string,
    position: number,
    watermarkTtlMs: number,
  ) {
    this.calls.push(`completeOrdered ${key} ${resource} ${position}`);
    return this.memory.completeOrdered(key, token, ttlMs, resource, position, watermarkTtlMs);
  }
}
