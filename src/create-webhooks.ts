import { type BodyBudget, ByteBudget } from './body-budget.js';
import { nextClaimToken } from './claim-token.js';
import { dedupPrefixes, noteSharedScope } from './dedup-scope.js';
import { parseEnvelope } from './envelope.js';
import {
  EventInProgressError,
  EventTooOldError,
  HandlerFailedError,
  HandlerTimeoutError,
  InvalidRequestError,
  InvalidSignatureError,
  LeaseLostError,
  MethodNotAllowedError,
  MissingSignatureError,
  PayloadTooLargeError,
  RawBodyUnavailableError,
  SecretUnavailableError,
  STATUS_TABLE,
  StoreUnavailableError,
  WebhookError,
} from './errors.js';
import { HandlerRegistry } from './handler-registry.js';
import { MisconfigurationWatch } from './misconfiguration-watch.js';
import { type ResolvedOptions, resolveOptions } from './options.js';
import { SENDER_RETRY_SPAN_MS } from './sender-schedule.js';
import { exceedsBytes, toText } from './raw-body.js';
import { DUPLICATE, HANDLED, isStatusCode, responseFor } from './responses.js';
import {
  DeliveryContext,
  type HandlerOutcome,
  isThenable,
  runInOrder,
  SUCCEEDED,
  toFailed,
  toSucceeded,
} from './run-handlers.js';
import { type DedupKey, ScopedStore } from './scoped-store.js';
import { secretList } from './secrets.js';
import {
  createVerifier,
  readHeader,
  SIGNATURE_HEADER,
  type SignatureCheck,
  type Verifier,
} from './signature.js';
import { type PendingTimeout, TimeoutQueue } from './timeout-queue.js';
import type {
  AnyWebhookEvent,
  ClaimResult,
  CompleteResult,
  DeliveryOutcome,
  DeliveryRecord,
  ErrorListener,
  EventFor,
  HandleInput,
  RawBody,
  SecretOption,
  WebhookEvent,
  WebhookEventName,
  WebhookHandler,
  WebhookLogger,
  WebhookResponse,
  WebhooksOptions,
  WildcardEventName,
} from './types.js';

/** Events dated further ahead than this are refused as forged or mis-clocked. */
const MAX_FUTURE_SKEW_SECONDS = 300;
/** Kept beyond the acceptance window: `created` is whole seconds and store clocks round. */
const CLOCK_MARGIN_MS = 1_000;

/**
 * A webhook receiver: register handlers with `on`, hand deliveries to `handle`. Adapters for each
 * framework wrap `handle`; nothing else decides what the sender is answered.
 *
 * @example
 * ```ts
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! });
 * webhooks.on('user.created', async (event) => { await db.users.insert(event.data); });
 * const { status, headers, body } = await webhooks.handle({ body: rawBody, headers: request.headers });
 * ```
 */
export interface Webhooks {
  /**
   * Run `handler` for one event type, several, or every type of a resource (`'payment.*'`). Handlers of
   * one event run one after another in registration order; the answer waits for all of them.
   */
  on<Name extends WebhookEventName | WildcardEventName>(
    name: Name | readonly Name[],
    handler: WebhookHandler<EventFor<Name>>,
  ): Webhooks;
  /** Run `handler` for every documented event type. */
  onAny(handler: WebhookHandler<AnyWebhookEvent>): Webhooks;
  /** Be told about failures on the receiving side (handlers, timeouts, store, lost leases, adapter setup). */
  onError(listener: ErrorListener): Webhooks;
  /**
   * Answer one delivery: size, signature, envelope, age, claim, handlers, completion, in that order.
   * Never throws; every outcome is a response from the status table.
   */
  handle(input: HandleInput): Promise<WebhookResponse>;
  /**
   * Verify and parse a delivery without deduplicating or running handlers. Throws the typed error of
   * the status table (MissingSignatureError, InvalidSignatureError, InvalidRequestError, ...).
   */
  verifyAndParse(body: RawBody, signatureHeader: string | null | undefined): Promise<WebhookEvent>;
  /** The answer for an error an adapter found itself (body too large, raw body gone), reported and logged. */
  reject(error: WebhookError): WebhookResponse;
  /** The largest body accepted, for adapters that stop reading past it. */
  readonly maxBodyBytes: number;
  /** The handler budget, for adapters whose platform has a shorter one. */
  readonly handlerTimeoutMs: number;
  /**
   * The bytes of bodies adapters may read at once (`maxBodyBytesInFlight`), shared by this receiver's
   * deliveries: adapters take each chunk before keeping it and answer `ReceiverBusyError` when it does
   * not fit.
   */
  readonly bodyBudget: BodyBudget;
}

type Verified =
  | {
      readonly ok: true;
      readonly event: WebhookEvent;
      readonly secretIndex: number;
      /** How long the id must be remembered once handled: until the event can no longer be accepted. */
      readonly rememberMs: number;
    }
  | { readonly ok: false; readonly error: WebhookError };

/** What a step answers: the response now, or a promise of it when the step had to wait. */
type Answer = WebhookResponse | Promise<WebhookResponse>;

/** What the log record of a delivery is made of. */
interface LogContext {
  /** When the delivery arrived (`performance.now()`), for the log; 0 without a logger. */
  readonly started: number;
  readonly event?: WebhookEvent;
  /** The id as verified (a handler may change `event.id`). */
  readonly eventId?: string;
  readonly secretIndex?: number;
  /** Set once the sender was answered 503 `handler_timeout` while the handlers still ran. */
  readonly late?: boolean;
}

/** One delivery past verification, as the claim, the handlers and the completion see it. */
interface Attempt extends LogContext {
  readonly event: WebhookEvent;
  /** The key the claim was made under: the id as verified, whatever a handler does to `event`. */
  readonly eventId: string;
  readonly secretIndex: number;
  readonly rememberMs: number;
  readonly timeoutMs: number;
  readonly handlers: readonly WebhookHandler<WebhookEvent>[];
  readonly token: string;
  /** The event's store key, built once (see ScopedStore.keyFor); set by the claim. */
  key: DedupKey | undefined;
  /** False when the store failed and `onStoreError: 'process'` runs the handlers unclaimed. */
  claimed: boolean;
  late: boolean;
  /** The handlers settled: renewals stop. */
  settled: boolean;
  /** Another attempt took the event over while the handlers ran; reported once. */
  leaseLost: boolean;
  /** The next renewal of the lease, while late handlers run. */
  renewal: PendingTimeout | undefined;
  /** Until when (`performance.now()`) the lease is renewed at the most. */
  renewUntil: number;
}

class WebhookReceiver implements Webhooks {
  readonly #options: ResolvedOptions;
  /** Built from the secrets: at construction, or on first use when `secret` is a function. */
  #verify: Verifier | undefined;
  /** Built with the verifier (the default scope is derived from the secrets); read only after it. */
  #store!: ScopedStore;
  readonly #storeTimeouts: TimeoutQueue;
  /** The `secret` function's pending call, shared by the deliveries that wait for it. */
  #loadingSecrets: Promise<SecretUnavailableError | undefined> | undefined;
  readonly #leaseMs: number;
  readonly #dedupTtlMs: number;
  readonly #registry = new HandlerRegistry();
  readonly #errorListeners: ErrorListener[] = [];
  readonly #handlerTimeouts: TimeoutQueue;
  /** Lease renewals of handlers still running after their answer; made when first needed. */
  #renewals: TimeoutQueue | undefined;
  /** Says on stderr when every delivery is refused for a reason of this receiver's setup (no logger). */
  readonly #watch: MisconfigurationWatch | undefined;
  #observerFailureShown = false;
  readonly bodyBudget: BodyBudget;

  constructor(options: WebhooksOptions) {
    this.#options = resolveOptions(options);
    const { secret, leaseSeconds, dedupTtlSeconds } = this.#options;
    this.#leaseMs = leaseSeconds * 1000;
    this.#dedupTtlMs = dedupTtlSeconds * 1000;
    this.#handlerTimeouts = new TimeoutQueue(this.#options.handlerTimeoutMs);
    this.#storeTimeouts = new TimeoutQueue(this.#options.storeTimeoutMs);
    if (typeof secret !== 'function') this.#applySecrets(secret);
    this.#watch = this.#options.logger ? undefined : new MisconfigurationWatch();
    this.bodyBudget = new ByteBudget(this.#options.maxBodyBytesInFlight);
  }

  get maxBodyBytes(): number {
    return this.#options.maxBodyBytes;
  }

  get handlerTimeoutMs(): number {
    return this.#options.handlerTimeoutMs;
  }

  on<Name extends WebhookEventName | WildcardEventName>(
    name: Name | readonly Name[],
    handler: WebhookHandler<EventFor<Name>>,
  ): Webhooks {
    this.#registry.add(name, handler as unknown as WebhookHandler<WebhookEvent>);
    return this;
  }

  onAny(handler: WebhookHandler<AnyWebhookEvent>): Webhooks {
    this.#registry.add(undefined, handler as unknown as WebhookHandler<WebhookEvent>);
    return this;
  }

  onError(listener: ErrorListener): Webhooks {
    if (typeof listener !== 'function') throw new TypeError('onError needs a function.');
    this.#errorListeners.push(listener);
    return this;
  }

  async verifyAndParse(body: RawBody, signatureHeader: string | null | undefined): Promise<WebhookEvent> {
    const verified = await this.#verifyAndParse(body, signatureHeader ?? undefined);
    if (!verified.ok) throw verified.error;
    return verified.event;
  }

  handle(input: HandleInput): Promise<WebhookResponse> {
    // Each step answers synchronously when it can (node:crypto, the memory store, a synchronous handler)
    // and returns a promise only when it must wait, so a delivery costs one promise here, not one a step.
    // Nothing may reject: whatever an adapter passes, or a bug, the sender gets an answer of the table.
    let answer: Answer;
    try {
      answer = this.#handle(input);
    } catch (error) {
      return Promise.resolve(this.#unexpected(error));
    }
    return answer instanceof Promise
      ? answer.catch((error: unknown) => this.#unexpected(error))
      : Promise.resolve(answer);
  }

  reject(error: WebhookError): WebhookResponse {
    const context: LogContext = { started: 0 };
    if (error.status < 500) return this.#refuse(context, error);
    this.#report(error, undefined);
    return this.#fail(context, error);
  }

  /** What depends on the secrets: the verifier with its prepared keys, and the dedup scope. */
  #applySecrets(secrets: readonly string[]): void {
    const { namespace, store } = this.#options;
    const prefixes = dedupPrefixes(namespace, secrets);
    this.#store = new ScopedStore(store, prefixes, this.#storeTimeouts);
    if (prefixes instanceof Promise) {
      prefixes.then((known) => noteSharedScope(store, namespace, known)).catch(() => {});
    } else noteSharedScope(store, namespace, prefixes);
    this.#verify = createVerifier(secrets);
  }

  /**
   * Call the `secret` function: synchronously when it answers synchronously (so a sync function keeps
   * the synchronous path), else once for all deliveries waiting. A failure is not kept: the next
   * delivery calls it again, so a secrets manager that was down is asked once it is back.
   */
  #loadSecrets(): SecretUnavailableError | undefined | Promise<SecretUnavailableError | undefined> {
    if (this.#loadingSecrets) return this.#loadingSecrets;
    const source = this.#options.secret as () => SecretOption | Promise<SecretOption>;
    let result: SecretOption | Promise<SecretOption>;
    try {
      result = source();
    } catch (cause) {
      return this.#secretFailed(cause);
    }
    if (!isThenable(result)) return this.#acceptSecrets(result);
    const loading = Promise.resolve(result).then(
      (value) => this.#acceptSecrets(value),
      (cause: unknown) => this.#secretFailed(cause),
    );
    this.#loadingSecrets = loading;
    void loading.then(() => {
      this.#loadingSecrets = undefined;
    });
    return loading;
  }

  #acceptSecrets(value: unknown): SecretUnavailableError | undefined {
    let secrets: readonly string[];
    try {
      secrets = secretList(value);
    } catch (cause) {
      return this.#secretFailed(cause);
    }
    this.#applySecrets(secrets);
    return undefined;
  }

  #secretFailed(cause: unknown): SecretUnavailableError {
    const error = new SecretUnavailableError({ cause });
    this.#report(error, undefined);
    return error;
  }

  #handle(input: HandleInput): Answer {
    const started = this.#options.logger ? performance.now() : 0;
    if (typeof input !== 'object' || input === null) {
      return this.reject(
        new RawBodyUnavailableError(`handle() needs { body, headers }, not ${describe(input)}.`),
      );
    }
    const { method } = input;
    if (method !== undefined && method !== 'POST' && String(method).toUpperCase() !== 'POST') {
      return this.#refuse({ started }, new MethodNotAllowedError());
    }
    const body = input.body;
    if (!isRawBody(body)) {
      return this.reject(
        new RawBodyUnavailableError(
          `handle() needs the raw body as a Uint8Array, ArrayBuffer or string, not ${describe(body)}; a body parser ran before the webhook route.`,
        ),
      );
    }
    const timeoutMs =
      input.handlerTimeoutMs !== undefined && input.handlerTimeoutMs < this.#options.handlerTimeoutMs
        ? Math.max(1, Math.floor(input.handlerTimeoutMs))
        : this.#options.handlerTimeoutMs;
    const verified = this.#verifyAndParse(body, readHeader(input.headers, SIGNATURE_HEADER));
    return verified instanceof Promise
      ? verified.then((result) => this.#afterVerify(result, timeoutMs, started))
      : this.#afterVerify(verified, timeoutMs, started);
  }

  /** Steps 1 to 4 of the order of work; nothing here touches the store or the handlers. */
  #verifyAndParse(body: RawBody, header: string | undefined): Verified | Promise<Verified> {
    if (exceedsBytes(body, this.#options.maxBodyBytes))
      return { ok: false, error: new PayloadTooLargeError() };
    const verify = this.#verify;
    if (verify === undefined) {
      const loaded = this.#loadSecrets();
      if (loaded instanceof Promise) {
        return loaded.then((error) => (error ? { ok: false, error } : this.#verifyAndParse(body, header)));
      }
      return loaded ? { ok: false, error: loaded } : this.#verifyAndParse(body, header);
    }
    const check = verify(body, header);
    return check instanceof Promise
      ? check.then((result) => this.#parse(body, result))
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
    const ageSeconds = Date.now() / 1000 - event.created;
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
    };
  }

  #afterVerify(verified: Verified, timeoutMs: number, started: number): Answer {
    if (!verified.ok) {
      const { error } = verified;
      if (error.status >= 500) return this.#fail({ started }, error);
      this.#watch?.refused(error.code);
      return this.#refuse({ started }, error);
    }
    this.#watch?.verified();
    const { event, secretIndex, rememberMs } = verified;
    const handlers = this.#registry.handlersFor(event.type);
    // Nothing to run means nothing to deduplicate: acknowledge without a store round trip.
    if (handlers.length === 0) return this.#finish({ started, event, secretIndex }, HANDLED, 'handled');
    return this.#claim({
      event,
      eventId: event.id,
      secretIndex,
      rememberMs,
      timeoutMs,
      started,
      handlers,
      token: nextClaimToken(),
      key: undefined,
      claimed: true,
      late: false,
      settled: false,
      leaseLost: false,
      renewal: undefined,
      renewUntil: 0,
    });
  }

  /** Step 5: claim the event id, so that a concurrent or later copy of the event does not run again. */
  #claim(attempt: Attempt): Answer {
    const key = this.#store.keyFor(attempt.eventId);
    if (key === undefined) {
      // The scope is still being derived (Web Crypto, first deliveries only).
      return this.#store.prefixes.then(
        () => this.#claim(attempt),
        (cause: unknown) => this.#claimFailed(attempt, cause),
      );
    }
    attempt.key = key;
    let state: ClaimResult | Promise<ClaimResult>;
    try {
      state = this.#store.claim(key, attempt.token, this.#leaseMs, attempt.rememberMs);
    } catch (cause) {
      return this.#claimFailed(attempt, cause);
    }
    return state instanceof Promise
      ? state.then(
          (result) => this.#afterClaim(attempt, result),
          (cause: unknown) => this.#claimFailed(attempt, cause),
        )
      : this.#afterClaim(attempt, state);
  }

  #afterClaim(attempt: Attempt, state: unknown): Answer {
    if (state === 'claimed') return this.#run(attempt);
    if (state === 'completed') return this.#finish(attempt, DUPLICATE, 'duplicate');
    if (state === 'in_progress')
      return this.#refuse(attempt, new EventInProgressError(this.#options.leaseSeconds));
    return this.#claimFailed(attempt, new TypeError(`store.claim answered ${JSON.stringify(state)}`));
  }

  #claimFailed(attempt: Attempt, cause: unknown): Answer {
    // A claim that timed out may still be carried out later (Redis runs what it was sent); release it
    // now, unawaited, so that it does not hold the event until its lease ends.
    this.#releaseQuietly(attempt);
    const error = new StoreUnavailableError('The store failed to claim the event.', { cause });
    this.#report(error, attempt.event);
    if (this.#options.onStoreError === 'reject') return this.#fail(attempt, error);
    attempt.claimed = false;
    return this.#run(attempt);
  }

  /** Step 6: run the handlers within the budget. */
  #run(attempt: Attempt): Answer {
    const context = new DeliveryContext(attempt.secretIndex);
    const handlersStarted = performance.now();
    const running = runInOrder(attempt.handlers, attempt.event, context);
    if (!(running instanceof Promise)) return this.#settle(attempt, running);
    // Only a handler still pending can run out of time; what ran synchronously counts against the budget.
    return new Promise<WebhookResponse>((resolve) => {
      const timeouts = this.#handlerTimeouts;
      const timeout = timeouts.add(
        () => resolve(this.#timedOut(attempt, context, running)),
        handlersStarted,
        attempt.timeoutMs,
      );
      running.then(
        () => {
          if (timeouts.cancel(timeout)) resolve(this.#settle(attempt, SUCCEEDED));
        },
        (cause: unknown) => {
          if (timeouts.cancel(timeout)) resolve(this.#settle(attempt, { failed: true, cause }));
        },
      );
    });
  }

  #timedOut(attempt: Attempt, context: DeliveryContext, running: Promise<unknown>): WebhookResponse {
    const error = new HandlerTimeoutError(attempt.timeoutMs);
    context.abort(error);
    this.#report(error, attempt.event);
    const response = this.#fail(attempt, error);
    // From here on the sender has its answer: what the handlers do next is logged as late. The claim
    // stays, renewed while they run, so a retry meanwhile gets 409 rather than a second run.
    attempt.late = true;
    if (attempt.claimed) this.#renew(attempt);
    running
      .then(toSucceeded, toFailed)
      .then((outcome) => this.#settle(attempt, outcome))
      .catch((cause: unknown) => this.#unexpected(cause));
    return response;
  }

  /**
   * Keep the claim of handlers that outlived their answer, every third of a lease, fenced by the claim
   * token. Only late handlers get here, so the fast path pays nothing; one shared timer serves them all.
   * Renewal stops once the sender can no longer retry (its whole schedule has passed).
   */
  #renew(attempt: Attempt): void {
    if (attempt.settled || attempt.leaseLost || !this.#store.renews) return;
    const now = performance.now();
    if (attempt.renewUntil === 0) attempt.renewUntil = now + SENDER_RETRY_SPAN_MS;
    if (now > attempt.renewUntil) return;
    this.#store.renew(attempt.key!, attempt.token, this.#leaseMs).then(
      (result) => {
        if (result === 'renewed') return this.#scheduleRenewal(attempt);
        attempt.leaseLost = true;
        this.#report(new LeaseLostError(attempt.eventId), attempt.event);
      },
      (cause: unknown) => {
        this.#report(
          new StoreUnavailableError('The store failed to renew the claim of handlers still running.', {
            cause,
          }),
          attempt.event,
        );
        this.#scheduleRenewal(attempt);
      },
    );
  }

  #scheduleRenewal(attempt: Attempt): void {
    if (attempt.settled) return;
    this.#renewals ??= new TimeoutQueue(Math.max(1, Math.floor(this.#leaseMs / 3)));
    attempt.renewal = this.#renewals.add(() => this.#renew(attempt));
  }

  /** Steps 7 and 8: complete or release the claim, and answer. */
  #settle(attempt: Attempt, outcome: HandlerOutcome): Answer {
    attempt.settled = true;
    if (attempt.renewal) this.#renewals?.cancel(attempt.renewal);
    const { key, token } = attempt;
    if (outcome.failed) {
      const error = new HandlerFailedError(outcome.cause);
      this.#report(error, attempt.event);
      if (!attempt.claimed) return this.#fail(attempt, error);
      let released: void | Promise<void>;
      try {
        released = this.#store.release(key!, token);
      } catch (cause) {
        released = Promise.reject(cause);
      }
      if (!(released instanceof Promise)) return this.#fail(attempt, error);
      return released.then(
        () => this.#fail(attempt, error),
        (cause: unknown) => {
          // The lease still ends by itself before the sender's first retry.
          this.#report(
            new StoreUnavailableError('The store failed to release the claim.', { cause }),
            attempt.event,
          );
          return this.#fail(attempt, error);
        },
      );
    }
    if (!attempt.claimed) return this.#handled(attempt, 'completed');
    let completed: CompleteResult | Promise<CompleteResult>;
    try {
      completed = this.#store.complete(key!, token, attempt.rememberMs);
    } catch (cause) {
      completed = Promise.reject(cause);
    }
    if (!(completed instanceof Promise)) return this.#handled(attempt, completed);
    return completed.then(
      (result) => this.#handled(attempt, result),
      (cause: unknown) => {
        // The handlers did their work: acknowledging is right; the failure to remember it is reported.
        this.#report(
          new StoreUnavailableError('The store failed to record the event as handled.', { cause }),
          attempt.event,
        );
        return this.#finish(attempt, HANDLED, 'handled');
      },
    );
  }

  #handled(attempt: Attempt, result: CompleteResult): WebhookResponse {
    if (result === 'lost' && !attempt.leaseLost) {
      attempt.leaseLost = true;
      this.#report(new LeaseLostError(attempt.eventId), attempt.event);
    }
    return this.#finish(attempt, HANDLED, 'handled');
  }

  #releaseQuietly(attempt: Attempt): void {
    if (attempt.key === undefined) return;
    try {
      const released = this.#store.release(attempt.key, attempt.token);
      if (released instanceof Promise) released.catch(() => {});
    } catch {
      // The lease ends by itself.
    }
  }

  /** A refusal (4xx, 409): the sender's fault or a race; nothing on our side failed. */
  #refuse(context: LogContext, error: WebhookError): WebhookResponse {
    const code = isStatusCode(error.code) ? error.code : 'internal_error';
    // Only envelope problems are echoed: they were found after the signature proved who sent the body.
    const message = error instanceof InvalidRequestError ? error.message : undefined;
    const retryAfter = error instanceof EventInProgressError ? error.retryAfterSeconds : undefined;
    return this.#finish(context, responseFor(code, message, retryAfter), 'rejected', code);
  }

  /** A failure on our side (5xx): the sender retries. */
  #fail(context: LogContext, error: WebhookError): WebhookResponse {
    const code = isStatusCode(error.code) ? error.code : 'internal_error';
    return this.#finish(context, responseFor(code), 'failed', code, error);
  }

  /** Whatever threw where nothing should: answered 500 so the sender retries, and reported. */
  #unexpected(cause: unknown): WebhookResponse {
    const error = new WebhookError(
      'internal_error',
      'service-webhooks failed unexpectedly while answering a delivery.',
      { cause },
    );
    this.#report(error, undefined);
    return this.#fail({ started: 0 }, error);
  }

  #report(error: WebhookError, event: WebhookEvent | undefined): void {
    if (this.#errorListeners.length === 0) {
      // Failures must never vanish: with no listener and no logger, say it on stderr.
      if (!this.#options.logger)
        console.error(
          `[service-webhooks] ${error.name} (${error.code}): ${error.message}`,
          error.cause ?? '',
        );
      return;
    }
    for (const listener of this.#errorListeners) {
      try {
        const result = listener(error, event);
        if (isThenable(result)) result.then(undefined, (cause: unknown) => this.#observerFailed(cause));
      } catch (cause) {
        this.#observerFailed(cause);
      }
    }
  }

  /**
   * An observer's own failure must neither change the answer nor crash the process (an unhandled
   * rejection would): it is said once on stderr, since the observer itself cannot be trusted to say it.
   */
  #observerFailed(cause: unknown): void {
    if (this.#observerFailureShown) return;
    this.#observerFailureShown = true;
    console.error(
      '[service-webhooks] An onError listener or the logger threw or rejected; the delivery was answered as usual. Further observer failures are not shown.',
      cause,
    );
  }

  #finish(
    context: LogContext,
    response: WebhookResponse,
    outcome: DeliveryOutcome,
    code?: string,
    error?: WebhookError,
  ): WebhookResponse {
    const logger = this.#options.logger;
    if (logger) this.#log(logger, context, response, outcome, code, error);
    return response;
  }

  #log(
    logger: WebhookLogger,
    context: LogContext,
    response: WebhookResponse,
    outcome: DeliveryOutcome,
    code: string | undefined,
    error: WebhookError | undefined,
  ): void {
    const { started, event, late } = context;
    // A late record repeats what the sender was told (503 handler_timeout), not an answer never sent.
    const record: { -readonly [K in keyof DeliveryRecord]: DeliveryRecord[K] } = {
      eventId: context.eventId ?? event?.id,
      eventType: event?.type,
      outcome,
      status: late ? STATUS_TABLE.handler_timeout.status : response.status,
      code: late ? 'handler_timeout' : code,
      durationMs: started === 0 ? 0 : Math.round((performance.now() - started) * 1000) / 1000,
      secretIndex: context.secretIndex,
    };
    if (error) {
      // `err` is the key pino's and bunyan's error serializer reads (message, stack, code, cause);
      // `error` stays for code that read it, hidden from loggers so the failure is printed once.
      record.err = error;
      Object.defineProperty(record, 'error', { value: error, enumerable: false });
    }
    if (late) record.late = true;
    try {
      let result: unknown;
      if (late) {
        result =
          outcome === 'failed'
            ? logger.error(record, 'webhook handlers failed after the delivery was answered')
            : logger.warn(record, 'webhook handlers finished after the delivery was answered');
      } else if (outcome === 'failed') result = logger.error(record, 'webhook delivery failed');
      else if (outcome === 'rejected') result = logger.warn(record, 'webhook delivery rejected');
      else result = logger.info(record, 'webhook delivery');
      if (isThenable(result)) result.then(undefined, (cause: unknown) => this.#observerFailed(cause));
    } catch (cause) {
      this.#observerFailed(cause);
    }
  }
}

function isRawBody(body: unknown): body is RawBody {
  return typeof body === 'string' || body instanceof Uint8Array || body instanceof ArrayBuffer;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'a parsed object' : typeof value;
}

/**
 * Create a webhook receiver. Options are checked here, and a mistake throws a `ConfigurationError`
 * that says what to change.
 *
 * @example
 * ```ts
 * import { createWebhooks } from 'service-webhooks';
 *
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! });
 * webhooks.on('user.created', async (event) => {
 *   await sendWelcomeMail(event.data.email);
 * });
 * webhooks.on('payment.*', async (event, { signal }) => {
 *   await ledger.record(event, { signal });
 * });
 * ```
 */
export function createWebhooks(options: WebhooksOptions): Webhooks {
  return new WebhookReceiver(options);
}
