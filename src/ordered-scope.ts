import { withDeadline } from './deadline.js';
import { ResourceBusyError } from './errors.js';
import { settled } from './eventual.js';
import { RESOURCE_SEPARATOR } from './ordering.js';
import { type DedupKey, type RunClaim, type RunStore, runMark, type ScopedStore } from './scoped-store.js';
import type {
  CompleteResult,
  IdempotencyStore,
  OrderingMode,
  RenewResult,
  ResourceClaimResult,
} from './types.js';

/** Told once an event was found stale and recorded as handled: the watermark it was behind. */
export type StaleNotice = (watermark: number) => void;

/**
 * The store as a run of one event guarded by the `ordering` option sees it: every call takes the
 * event's resource along. Made per guarded delivery (never for an unguarded one).
 *
 * - claim: the event (as ever), then its resource; a busy resource gives the event back and answers
 *   `ResourceBusyError`; under `'latest'`, an event behind the watermark is completed at once, without
 *   running (`completeOrdered` with the watermark left as it is), and answers `'stale'`.
 * - complete: `completeOrdered`, which advances the watermark and ends the resource's lease in the
 *   step that records the event, so no crash between the two can let an older event run later.
 * - release and renew: the event's and the resource's together.
 *
 * Round trips of a guarded delivery that runs: claim, claimResource, completeOrdered (three, against
 * an unguarded delivery's two); a stale one: claim, claimResource, completeOrdered; a busy one: claim,
 * claimResource, release. While a secret is rotated (several scope prefixes) each is made per prefix,
 * in the scope's fixed order, so receivers that share any one prefix exclude each other.
 */
export class OrderedScope implements RunStore {
  readonly waits = true;
  readonly ordered = true;
  readonly renews: boolean;
  readonly #scoped: ScopedStore;
  readonly #store: IdempotencyStore;
  readonly #mode: OrderingMode;
  readonly #resource: string;
  readonly #position: number;
  readonly #watermarkTtlMs: number;
  readonly #onStale: StaleNotice;
  /** The resource's key per scope prefix, once the prefixes are known. */
  #resourceKeys: readonly string[] | undefined;

  constructor(
    scoped: ScopedStore,
    mode: OrderingMode,
    resource: string,
    position: number,
    watermarkTtlMs: number,
    onStale: StaleNotice,
  ) {
    this.#scoped = scoped;
    this.#store = scoped.store;
    this.renews = scoped.renews;
    this.#mode = mode;
    this.#resource = resource;
    this.#position = position;
    this.#watermarkTtlMs = watermarkTtlMs;
    this.#onStale = onStale;
  }

  get prefixes(): Promise<readonly string[]> {
    return this.#scoped.prefixes;
  }

  /** The key of the event: its resource's key, the separator, then the id (see `claimResource`). */
  keyFor(eventId: string): DedupKey | undefined {
    return this.#keys(eventId);
  }

  /** An inbox run's key: as `keyFor`, the run's mark ahead of the id rather than ahead of the scope. */
  runKeyFor(eventId: string, replayId: string | undefined): DedupKey | undefined {
    return this.#keys(runMark(replayId) + eventId);
  }

  #keys(rest: string): DedupKey | undefined {
    const resources = this.#resourcesKnown();
    if (resources === undefined) return undefined;
    const keys = resources.map((resource) => resource + RESOURCE_SEPARATOR + rest);
    return keys.length === 1 ? keys[0] : keys;
  }

  #resourcesKnown(): readonly string[] | undefined {
    if (this.#resourceKeys) return this.#resourceKeys;
    const prefixes = this.#scoped.keyFor('');
    if (prefixes === undefined) return undefined;
    this.#resourceKeys = (typeof prefixes === 'string' ? [prefixes] : prefixes).map(
      (prefix) => prefix + this.#resource,
    );
    return this.#resourceKeys;
  }

  async claim(key: DedupKey, token: string, leaseMs: number, rememberMs: number): Promise<RunClaim> {
    const state = await this.#scoped.claim(key, token, leaseMs, rememberMs);
    if (state !== 'claimed') return state;
    const resources = this.#resourcesKnown()!;
    const held: string[] = [];
    let watermark: number | undefined;
    // A failure here rejects the claim; the run then releases the event's key and every resource.
    for (const resource of resources) {
      const found = await this.#call(
        () => this.#store.claimResource!(resource, token, leaseMs),
        'store.claimResource',
      );
      if (!isResourceClaim(found)) throw new TypeError(`claimResource answered ${JSON.stringify(found)}`);
      if (found.outcome === 'busy') {
        await this.#giveBack(key, held, token);
        return new ResourceBusyError(Math.max(1, Math.ceil(found.retryAfterMs / 1000)));
      }
      held.push(resource);
      if (found.watermark !== undefined && (watermark === undefined || found.watermark > watermark))
        watermark = found.watermark;
    }
    if (this.#mode === 'latest' && watermark !== undefined && this.#position < watermark) {
      // Recorded as handled, so that its retries are duplicates; the watermark stays where it is.
      const recorded = await this.#completeAll(key, token, rememberMs);
      if (recorded === 'completed') {
        this.#onStale(watermark);
        return 'stale';
      }
      // Another attempt took the event over meanwhile (our lease ended): it decides.
      return 'in_progress';
    }
    return 'claimed';
  }

  complete(key: DedupKey, token: string, ttlMs: number): Promise<CompleteResult> {
    return this.#completeAll(key, token, ttlMs);
  }

  async release(key: DedupKey, token: string): Promise<void> {
    await this.#giveBack(key, this.#resourcesKnown() ?? [], token);
  }

  async renew(key: DedupKey, token: string, leaseMs: number): Promise<RenewResult> {
    const resources = this.#resourcesKnown() ?? [];
    const results = await Promise.all([
      this.#scoped.renew(key, token, leaseMs),
      ...resources.map((resource) =>
        this.#call(() => this.#store.renewResource!(resource, token, leaseMs), 'store.renewResource'),
      ),
    ]);
    return results.every((result) => result === 'renewed') ? 'renewed' : 'lost';
  }

  async #completeAll(key: DedupKey, token: string, ttlMs: number): Promise<CompleteResult> {
    const keys = typeof key === 'string' ? [key] : key;
    const resources = this.#resourcesKnown()!;
    const results = await Promise.all(
      keys.map((one, index) =>
        this.#call(
          () =>
            this.#store.completeOrdered!(
              one,
              token,
              ttlMs,
              resources[index]!,
              this.#position,
              this.#watermarkTtlMs,
            ),
          'store.completeOrdered',
        ),
      ),
    );
    return results.every((result) => result === 'completed') ? 'completed' : 'lost';
  }

  async #giveBack(key: DedupKey, resources: readonly string[], token: string): Promise<void> {
    await Promise.all([
      this.#scoped.release(key, token),
      ...resources.map((resource) =>
        this.#call(() => this.#store.releaseResource!(resource, token), 'store.releaseResource'),
      ),
    ]);
  }

  #call<T>(call: () => Promise<T>, what: string): Promise<T> {
    return withDeadline(settled(call), this.#scoped.deadlines, what);
  }
}

function isResourceClaim(found: unknown): found is ResourceClaimResult {
  if (typeof found !== 'object' || found === null) return false;
  const { outcome } = found as { outcome?: unknown };
  if (outcome === 'busy') return typeof (found as { retryAfterMs?: unknown }).retryAfterMs === 'number';
  if (outcome !== 'claimed') return false;
  const { watermark } = found as { watermark?: unknown };
  return watermark === undefined || typeof watermark === 'number';
}
