import { now } from './clock.js';
import { withDeadline } from './deadline.js';
import { type SecretUnavailableError, UnknownTenantError } from './errors.js';
import { type Eventual, isThenable } from './eventual.js';
import { secretList } from './secrets.js';
import type { TimeoutQueue } from './timeout-queue.js';

/** The `tenant` option's cache settings, checked (see `TenantOptions`). */
export interface TenantCacheSettings {
  readonly cacheTtlMs: number;
  readonly maxTenants: number;
  readonly unknownTtlMs: number;
}

/** What the directory keeps for a known tenant: its secrets and what was made from them. */
interface Known<T> {
  readonly secrets: readonly string[];
  readonly made: T;
  readonly until: number;
}

type TenantSecretSource = (tenant: string) => unknown;

/**
 * The tenants a receiver with `tenant` knows: per tenant, what is made from its secrets (its verifier
 * and its scoped store), asked of the user's `secret` function on first use and kept for
 * `cacheTtlMs`, the least recently used dropped past `maxTenants`.
 *
 * - A tenant the function says does not exist (`undefined`, `null`, an empty list) is kept as such
 *   for `unknownTtlMs`, in a map of its own as large at most: made-up ids never push out a known tenant.
 * - A failure (a throw, a rejection, a blank secret, no answer within the deadline) is kept as
 *   nothing: the next delivery asks again, as with the receiver's own `secret` function.
 * - Concurrent deliveries for one tenant share one call. A call that answers after its deadline still
 *   fills the cache: the deliveries after it find the answer.
 */
export class TenantDirectory<T> {
  readonly #source: TenantSecretSource;
  readonly #make: (tenant: string, secrets: readonly string[]) => T;
  readonly #settings: TenantCacheSettings;
  readonly #deadlines: TimeoutQueue;
  readonly #failed: (cause: unknown) => SecretUnavailableError;
  /** Map order is use order: the first key is the least recently used. */
  readonly #known = new Map<string, Known<T>>();
  readonly #unknown = new Map<string, number>();
  readonly #pending = new Map<string, Promise<T | UnknownTenantError | SecretUnavailableError>>();

  constructor(
    source: TenantSecretSource,
    make: (tenant: string, secrets: readonly string[]) => T,
    settings: TenantCacheSettings,
    deadlines: TimeoutQueue,
    failed: (cause: unknown) => SecretUnavailableError,
  ) {
    this.#source = source;
    this.#make = make;
    this.#settings = settings;
    this.#deadlines = deadlines;
    this.#failed = failed;
  }

  /** How many tenants are kept, known and unknown (for tests and the docs' claims). */
  get size(): { readonly known: number; readonly unknown: number } {
    return { known: this.#known.size, unknown: this.#unknown.size };
  }

  /** The tenant's verifier and store, or why there is none. Synchronous when cached or when `secret` is. */
  find(tenant: string): Eventual<T | UnknownTenantError | SecretUnavailableError> {
    const time = now();
    const known = this.#known.get(tenant);
    if (known !== undefined && known.until > time) {
      this.#known.delete(tenant);
      this.#known.set(tenant, known);
      return known.made;
    }
    const unknownUntil = this.#unknown.get(tenant);
    if (unknownUntil !== undefined) {
      if (unknownUntil > time) return unknownTenant(tenant);
      this.#unknown.delete(tenant);
    }
    const pending = this.#pending.get(tenant);
    if (pending !== undefined) return pending;
    let result: unknown;
    try {
      result = this.#source(tenant);
    } catch (cause) {
      return this.#failed(cause);
    }
    if (!isThenable(result)) return this.#settle(tenant, result);
    const answered = Promise.resolve(result).then((value) => this.#settle(tenant, value));
    // A late rejection was reported by the deadline already.
    answered.catch(() => {});
    const loading = withDeadline(answered, this.#deadlines, 'The tenant `secret` function').then(
      (found) => found,
      (cause: unknown) => this.#failed(cause),
    );
    this.#pending.set(tenant, loading);
    void loading.then(() => this.#pending.delete(tenant));
    return loading;
  }

  #settle(tenant: string, value: unknown): T | UnknownTenantError | SecretUnavailableError {
    if (value === undefined || value === null || (Array.isArray(value) && value.length === 0)) {
      this.#known.delete(tenant);
      const { unknownTtlMs, maxTenants } = this.#settings;
      if (unknownTtlMs > 0) {
        this.#unknown.delete(tenant);
        this.#unknown.set(tenant, now() + unknownTtlMs);
        if (this.#unknown.size > maxTenants) this.#unknown.delete(this.#unknown.keys().next().value!);
      }
      return unknownTenant(tenant);
    }
    let secrets: readonly string[];
    try {
      secrets = secretList(value);
    } catch (cause) {
      return this.#failed(cause);
    }
    const before = this.#known.get(tenant);
    // The same secrets again (the usual refresh): keep what was made, its keys already prepared.
    const made =
      before !== undefined && sameList(before.secrets, secrets) ? before.made : this.#make(tenant, secrets);
    this.#known.delete(tenant);
    this.#unknown.delete(tenant);
    this.#known.set(tenant, { secrets, made, until: now() + this.#settings.cacheTtlMs });
    if (this.#known.size > this.#settings.maxTenants) this.#known.delete(this.#known.keys().next().value!);
    return made;
  }
}

function unknownTenant(tenant: string): UnknownTenantError {
  return new UnknownTenantError(tenant, 'the tenant `secret` function knows no such tenant.');
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}
