import { withDeadline } from './deadline.js';
import { dedupPrefixes, noteSharedScope, tenantPrefixes } from './dedup-scope.js';
import { parseEnvelope } from './envelope.js';
import {
  EventTooOldError,
  InvalidRequestError,
  InvalidSignatureError,
  MissingSignatureError,
  PayloadTooLargeError,
  SecretUnavailableError,
} from './errors.js';
import { chain, type Eventual, isThenable } from './eventual.js';
import { InboxSeal } from './inbox-seal.js';
import type { Observers } from './observers.js';
import type { ResolvedOptions } from './options.js';
import { exceedsBytes, toText } from './raw-body.js';
import { ScopedStore } from './scoped-store.js';
import { secretList } from './secrets.js';
import { createVerifier, type SignatureCheck, type Verifier } from './signature.js';
import type { TimeoutQueue } from './timeout-queue.js';
import type { RawBody, SecretOption, WebhookEvent } from './types.js';
import type { Verified } from './verified-delivery.js';

/** Events dated further ahead than this are refused as forged or mis-clocked. */
const MAX_FUTURE_SKEW_SECONDS = 300;
/** Kept beyond the acceptance window: `created` is whole seconds and store clocks round. */
const CLOCK_MARGIN_MS = 1_000;

export type { Accepted, Verified } from './verified-delivery.js';

type SecretSource = () => SecretOption | Promise<SecretOption>;

/**
 * Steps 1 to 4 of a delivery (size, signature, envelope, age), and what hangs on the secrets: the
 * verifier with its prepared keys, and the store seen through the dedup scope derived from them. Both
 * are made at construction, or on first use when `secret` is a function.
 */
export class DeliveryVerifier {
  readonly #options: ResolvedOptions;
  readonly #storeTimeouts: TimeoutQueue;
  readonly #observers: Observers;
  readonly #dedupTtlMs: number;
  #signatures: Verifier | undefined;
  #store: ScopedStore | undefined;
  #inboxSeal: InboxSeal | undefined;
  /** The `secret` function's pending call, shared by the deliveries that wait for it. */
  #loading: Promise<SecretUnavailableError | undefined> | undefined;
  /** Calls of the `secret` function so far, and the one whose secrets are in use. */
  #calls = 0;
  #appliedCall = 0;

  /** With the `tenant` option, the tenant this verifier serves and its part of the store keys. */
  readonly #tenant: { readonly id: string; readonly keyPart: string } | undefined;

  constructor(
    options: ResolvedOptions,
    storeTimeouts: TimeoutQueue,
    observers: Observers,
    tenant: { readonly id: string; readonly keyPart: string } | undefined = undefined,
  ) {
    this.#tenant = tenant;
    this.#options = options;
    this.#storeTimeouts = storeTimeouts;
    this.#observers = observers;
    this.#dedupTtlMs = options.dedupTtlSeconds * 1000;
    if (options.inboxKeys) this.#inboxSeal = new InboxSeal(options.inboxKeys);
    if (typeof options.secret !== 'function') this.#apply(options.secret);
  }

  /**
   * The store in this receiver's scope. Known once a delivery was verified (or at once with literal
   * secrets); before that, {@link ready} makes it.
   */
  get store(): ScopedStore {
    return this.#store!;
  }

  /**
   * The inbox's seals: from the `inboxKey` option, or derived from the secrets (then made with them,
   * so known once {@link ready} was).
   */
  get inboxSeal(): InboxSeal {
    return this.#inboxSeal!;
  }

  /** Make the verifier and the scoped store if the `secret` function was not called yet. */
  ready(): Eventual<SecretUnavailableError | undefined> {
    return this.#signatures ? undefined : this.#load();
  }

  verify(body: RawBody, header: string | undefined): Eventual<Verified> {
    if (exceedsBytes(body, this.#options.maxBodyBytes))
      return { ok: false, error: new PayloadTooLargeError() };
    const signatures = this.#signatures;
    if (signatures === undefined) {
      // First use of a `secret` function: a closure is fine on this once-per-receiver path.
      return chain(
        this.#load(),
        undefined,
        (_, error): Eventual<Verified> => (error ? { ok: false, error } : this.verify(body, header)),
      );
    }
    // Not `chain` with a bound callback: a closure made per receiver took the optimized code of the
    // delivery path with it when its receiver went; a private method is one function for all.
    const check = signatures.check(body, header);
    return check instanceof Promise
      ? check.then((checked) => this.#parse(body, checked))
      : this.#parse(body, check);
  }

  #parse(body: RawBody, check: SignatureCheck): Verified {
    if (!check.ok) {
      return {
        ok: false,
        error: check.code === 'missing_signature' ? new MissingSignatureError() : new InvalidSignatureError(),
      };
    }
    const text = toText(body);
    if (text === undefined) {
      return { ok: false, error: new InvalidRequestError('The body is not valid UTF-8.') };
    }
    let event: WebhookEvent;
    try {
      event = parseEnvelope(text);
    } catch (error) {
      return { ok: false, error: error as InvalidRequestError };
    }
    const { maxEventAgeSeconds } = this.#options;
    const receivedAt = Date.now();
    const ageSeconds = receivedAt / 1000 - event.created;
    if (ageSeconds > maxEventAgeSeconds || ageSeconds < -MAX_FUTURE_SKEW_SECONDS) {
      return { ok: false, error: new EventTooOldError() };
    }
    // An event dated ahead of this clock stays acceptable for longer than maxEventAgeSeconds from now:
    // its id is remembered until then, so a captured copy cannot run again in between.
    const acceptableForMs = Math.ceil((maxEventAgeSeconds - ageSeconds) * 1000) + CLOCK_MARGIN_MS;
    return {
      ok: true,
      event,
      secretIndex: check.secretIndex,
      rememberMs: Math.max(acceptableForMs, this.#dedupTtlMs),
      receivedAt,
    };
  }

  #apply(secrets: readonly string[]): void {
    const { namespace, store } = this.#options;
    const tenant = this.#tenant;
    if (tenant !== undefined) {
      // Every tenant's scope holds its id: no two tenants share one, so there is nothing to warn about
      // (and a set of every tenant's prefixes would grow with the tenants).
      const scoped = tenantPrefixes(dedupPrefixes(namespace, secrets), tenant.keyPart);
      this.#store = new ScopedStore(store, scoped, this.#storeTimeouts, tenant.id);
      this.#signatures = createVerifier(secrets);
      // The tenant's entries are sealed with keys of its own secrets (or the receiver's `inboxKey`).
      if (!this.#options.inboxKeys) this.#inboxSeal = new InboxSeal(secrets);
      return;
    }
    const prefixes = dedupPrefixes(namespace, secrets);
    this.#store = new ScopedStore(store, prefixes, this.#storeTimeouts);
    if (prefixes instanceof Promise) {
      prefixes.then((known) => noteSharedScope(store, namespace, known)).catch(() => {});
    } else noteSharedScope(store, namespace, prefixes);
    this.#signatures = createVerifier(secrets);
    if (!this.#options.inboxKeys) this.#inboxSeal = new InboxSeal(secrets);
  }

  /**
   * Call the `secret` function: synchronously when it answers synchronously (so a sync function keeps
   * the synchronous path), else once for all deliveries waiting, within `storeTimeoutMs`. Neither a
   * failure nor a miss is kept: the next delivery calls it again, so a secrets manager that was down or
   * hung is asked once it is back. A call that answers after its deadline still counts: its secret
   * serves the deliveries after it (unless a later call already answered).
   */
  #load(): Eventual<SecretUnavailableError | undefined> {
    if (this.#loading) return this.#loading;
    const source = this.#options.secret as SecretSource;
    let result: SecretOption | Promise<SecretOption>;
    try {
      result = source();
    } catch (cause) {
      return this.#failed(cause);
    }
    if (!isThenable(result)) return this.#accept(result);
    const call = ++this.#calls;
    const answered = Promise.resolve(result).then((value) =>
      // A late answer must not replace what a newer call already applied.
      call >= this.#appliedCall ? this.#accept(value, call) : undefined,
    );
    const loading = withDeadline(answered, this.#storeTimeouts, 'The `secret` function').then(
      (failure) => failure,
      (cause: unknown) => this.#failed(cause),
    );
    // A late rejection was reported by the deadline already: nothing more to say about that call.
    answered.catch(() => {});
    this.#loading = loading;
    void loading.then(() => {
      this.#loading = undefined;
    });
    return loading;
  }

  #accept(value: unknown, call = this.#calls): SecretUnavailableError | undefined {
    let secrets: readonly string[];
    try {
      secrets = secretList(value);
    } catch (cause) {
      return this.#failed(cause);
    }
    this.#appliedCall = call;
    this.#apply(secrets);
    return undefined;
  }

  #failed(cause: unknown): SecretUnavailableError {
    const error = new SecretUnavailableError({ cause });
    this.#observers.report(error, undefined);
    return error;
  }
}
