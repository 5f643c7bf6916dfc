import { nextClaimToken } from './claim-token.js';
import { withDeadline } from './deadline.js';
import { parseEnvelope } from './envelope.js';
import {
  EventTooOldError,
  HandlerFailedError,
  HandlerTimeoutError,
  InvalidRequestError,
  InvalidSignatureError,
  LeaseLostError,
  MissingSignatureError,
  PayloadTooLargeError,
  RawBodyUnavailableError,
  StoreUnavailableError,
  type WebhookError,
} from './errors.js';
import { HandlerRegistry } from './handler-registry.js';
import { syncCalls } from './memory-store.js';
import { type ResolvedOptions, resolveOptions } from './options.js';
import { exceedsBytes, toText } from './raw-body.js';
import { DUPLICATE, HANDLED, isStatusCode, responseFor } from './responses.js';
import {
  createVerifier,
  readHeader,
  SIGNATURE_HEADER,
  type SignatureCheck,
  type Verifier,
} from './signature.js';
import { TimeoutQueue } from './timeout-queue.js';
import type {
  AnyWebhookEvent,
  ClaimResult,
  CompleteResult,
  DeliveryOutcome,
  ErrorListener,
  EventFor,
  HandleInput,
  HandlerContext,
  IdempotencyStore,
  RawBody,
  WebhookEvent,
  WebhookEventName,
  WebhookHandler,
  WebhookResponse,
  WebhooksOptions,
  WildcardEventName,
} from './types.js';

/** Events dated further ahead than this are refused as forged or mis-clocked. */
const MAX_FUTURE_SKEW_SECONDS = 300;

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
}

type Verified =
  | { readonly ok: true; readonly event: WebhookEvent; readonly secretIndex: number }
  | { readonly ok: false; readonly error: WebhookError };

type HandlerOutcome = { readonly failed: false } | { readonly failed: true; readonly cause: unknown };

const SUCCEEDED: HandlerOutcome = Object.freeze({ failed: false });

/** What a step answers: the response now, or a promise of it when the step had to wait. */
type Answer = WebhookResponse | Promise<WebhookResponse>;

/** One delivery past verification, as the claim, the handlers and the completion see it. */
interface Attempt {
  readonly event: WebhookEvent;
  readonly secretIndex: number;
  readonly timeoutMs: number;
  /** When the delivery arrived (`performance.now()`), for the log; 0 without a logger. */
  readonly started: number;
  readonly handlers: readonly WebhookHandler<WebhookEvent>[];
  readonly token: string;
  /** False when the store failed and `onStoreError: 'process'` runs the handlers unclaimed. */
  claimed: boolean;
}

class WebhookReceiver implements Webhooks {
  readonly #options: ResolvedOptions;
  readonly #verify: Verifier;
  /** The default MemoryStore's synchronous calls, when the store is one nobody modified. */
  readonly #memory: ReturnType<typeof syncCalls>;
  readonly #registry = new HandlerRegistry();
  readonly #errorListeners: ErrorListener[] = [];
  readonly #handlerTimeouts: TimeoutQueue;
  readonly #storeTimeouts: TimeoutQueue;

  constructor(options: WebhooksOptions) {
    this.#options = resolveOptions(options);
    this.#verify = createVerifier(this.#options.secrets);
    // Resolved once: the store is fixed for the receiver's life, so this is not a per-delivery check.
    this.#memory = syncCalls(this.#options.store);
    this.#handlerTimeouts = new TimeoutQueue(this.#options.handlerTimeoutMs);
    this.#storeTimeouts = new TimeoutQueue(this.#options.storeTimeoutMs);
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
    try {
      const answer = this.#handle(input);
      return answer instanceof Promise ? answer : Promise.resolve(answer);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  reject(error: WebhookError): WebhookResponse {
    const code = isStatusCode(error.code) ? error.code : 'handler_failed';
    const response = responseFor(code);
    if (response.status >= 500) this.#report(error, undefined);
    return this.#finish(
      0,
      response,
      response.status >= 500 ? 'failed' : 'rejected',
      code,
      undefined,
      undefined,
      error,
    );
  }

  #handle(input: HandleInput): Answer {
    const started = this.#options.logger ? performance.now() : 0;
    const { method } = input;
    if (method !== undefined && method !== 'POST' && method.toUpperCase() !== 'POST') {
      return this.#finish(started, responseFor('method_not_allowed'), 'rejected', 'method_not_allowed');
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
    const check = this.#verify(body, header);
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
    let event: WebhookEvent;
    try {
      event = parseEnvelope(toText(body));
    } catch (error) {
      return { ok: false, error: error as InvalidRequestError };
    }
    const ageSeconds = Date.now() / 1000 - event.created;
    if (ageSeconds > this.#options.maxEventAgeSeconds || ageSeconds < -MAX_FUTURE_SKEW_SECONDS) {
      return { ok: false, error: new EventTooOldError() };
    }
    return { ok: true, event, secretIndex: check.secretIndex };
  }

  #afterVerify(verified: Verified, timeoutMs: number, started: number): Answer {
    if (!verified.ok) {
      const { error } = verified;
      const message = error instanceof InvalidRequestError ? error.message : undefined;
      return this.#finish(started, responseFor(error.code as never, message), 'rejected', error.code);
    }
    const { event, secretIndex } = verified;
    const handlers = this.#registry.handlersFor(event.type);
    // Nothing to run means nothing to deduplicate: acknowledge without a store round trip.
    if (handlers.length === 0)
      return this.#finish(started, HANDLED, 'handled', undefined, event, secretIndex);
    return this.#claim({
      event,
      secretIndex,
      timeoutMs,
      started,
      handlers,
      token: nextClaimToken(),
      claimed: true,
    });
  }

  /** Step 5: claim the event id, so that a concurrent or later copy of the event does not run again. */
  #claim(attempt: Attempt): Answer {
    const { event, token } = attempt;
    const leaseMs = this.#options.leaseSeconds * 1000;
    const memory = this.#memory;
    if (memory) {
      let state: ClaimResult;
      try {
        state = memory.claim(event.id, token, leaseMs);
      } catch (cause) {
        return this.#claimFailed(attempt, cause);
      }
      return this.#afterClaim(attempt, state);
    }
    return this.#storeCall((store) => store.claim(event.id, token, leaseMs), 'store.claim').then(
      (state) => this.#afterClaim(attempt, state),
      (cause: unknown) => this.#claimFailed(attempt, cause),
    );
  }

  #afterClaim(attempt: Attempt, state: unknown): Answer {
    const { event, secretIndex, started } = attempt;
    if (state === 'claimed') return this.#run(attempt);
    if (state === 'completed')
      return this.#finish(started, DUPLICATE, 'duplicate', undefined, event, secretIndex);
    if (state === 'in_progress') {
      const response = responseFor('event_in_progress', undefined, this.#options.leaseSeconds);
      return this.#finish(started, response, 'rejected', 'event_in_progress', event, secretIndex);
    }
    return this.#claimFailed(attempt, new TypeError(`store.claim answered ${JSON.stringify(state)}`));
  }

  #claimFailed(attempt: Attempt, cause: unknown): Answer {
    const { event, started, secretIndex } = attempt;
    // A claim that timed out may still be carried out later (Redis runs what it was sent); release it
    // now, unawaited, so that it does not hold the event until its lease ends.
    this.#storeCall((store) => store.release(event.id, attempt.token), 'store.release').catch(() => {});
    const error = new StoreUnavailableError('The store failed to claim the event.', { cause });
    this.#report(error, event);
    if (this.#options.onStoreError === 'reject') {
      return this.#finish(
        started,
        responseFor('store_unavailable'),
        'failed',
        error.code,
        event,
        secretIndex,
        error,
      );
    }
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
    const { event, started, secretIndex } = attempt;
    const error = new HandlerTimeoutError(attempt.timeoutMs);
    context.abort(error);
    this.#report(error, event);
    // The claim stays until the handlers settle, so a retry meanwhile gets 409 rather than a second run.
    if (attempt.claimed) {
      running.then(toSucceeded, toFailed).then((outcome) => this.#settle(attempt, outcome));
    }
    return this.#finish(
      started,
      responseFor('handler_timeout'),
      'failed',
      error.code,
      event,
      secretIndex,
      error,
    );
  }

  /** Steps 7 and 8: complete or release the claim, and answer. */
  #settle(attempt: Attempt, outcome: HandlerOutcome): Answer {
    const { event, token, started, secretIndex } = attempt;
    const memory = this.#memory;
    if (outcome.failed) {
      const error = new HandlerFailedError(outcome.cause);
      this.#report(error, event);
      const answer = () =>
        this.#finish(started, responseFor('handler_failed'), 'failed', error.code, event, secretIndex, error);
      if (!attempt.claimed) return answer();
      if (memory) {
        memory.release(event.id, token);
        return answer();
      }
      return this.#storeCall((store) => store.release(event.id, token), 'store.release').then(
        answer,
        (cause) => {
          // The lease still ends by itself before the sender's first retry.
          this.#report(new StoreUnavailableError('The store failed to release the claim.', { cause }), event);
          return answer();
        },
      );
    }
    if (!attempt.claimed) return this.#handled(attempt, 'completed');
    const ttlMs = this.#options.dedupTtlSeconds * 1000;
    if (memory) return this.#handled(attempt, memory.complete(event.id, token, ttlMs));
    return this.#storeCall((store) => store.complete(event.id, token, ttlMs), 'store.complete').then(
      (result) => this.#handled(attempt, result),
      (cause) => {
        // The handlers did their work: acknowledging is right; the failure to remember it is reported.
        this.#report(
          new StoreUnavailableError('The store failed to record the event as handled.', { cause }),
          event,
        );
        return this.#finish(started, HANDLED, 'handled', undefined, event, secretIndex);
      },
    );
  }

  #handled(attempt: Attempt, result: CompleteResult): WebhookResponse {
    const { event, started, secretIndex } = attempt;
    if (result === 'lost') this.#report(new LeaseLostError(event.id), event);
    return this.#finish(started, HANDLED, 'handled', undefined, event, secretIndex);
  }

  /** A store call within `storeTimeoutMs`; a store that throws instead of rejecting is treated alike. */
  #storeCall<T>(call: (store: IdempotencyStore) => Promise<T>, what: string): Promise<T> {
    let pending: Promise<T>;
    try {
      pending = call(this.#options.store);
    } catch (error) {
      return Promise.reject(error);
    }
    return withDeadline(pending, this.#storeTimeouts, what);
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
        listener(error, event);
      } catch {
        // An observer's own failure must not change the answer to the sender.
      }
    }
  }

  #finish(
    started: number,
    response: WebhookResponse,
    outcome: DeliveryOutcome,
    code: string | undefined,
    event?: WebhookEvent,
    secretIndex?: number,
    error?: WebhookError,
  ): WebhookResponse {
    const logger = this.#options.logger;
    if (logger) {
      const record = {
        eventId: event?.id,
        eventType: event?.type,
        outcome,
        status: response.status,
        code,
        durationMs: started === 0 ? 0 : Math.round((performance.now() - started) * 1000) / 1000,
        secretIndex,
        ...(error ? { error } : {}),
      };
      try {
        if (outcome === 'failed') logger.error(record, 'webhook delivery failed');
        else if (outcome === 'rejected') logger.warn(record, 'webhook delivery rejected');
        else logger.info(record, 'webhook delivery');
      } catch {
        // A broken logger must not change the answer to the sender.
      }
    }
    return response;
  }
}

/**
 * The handler context. Its AbortController is built only when a handler reads `signal`, which most
 * never do: creating one costs more than the rest of the dispatch together (EventTarget set-up and
 * the garbage it leaves). A signal first read after the timeout is already aborted, with the same
 * reason. `signal` is a getter on the prototype (a getter defined per object is as slow as the
 * controller itself), so it is read, destructured and passed on as before, but not copied by a spread.
 */
class DeliveryContext implements HandlerContext {
  readonly secretIndex: number;
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;

  constructor(secretIndex: number) {
    this.secretIndex = secretIndex;
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  abort(reason: unknown): void {
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }
}

/**
 * Run the handlers one after another. Handlers that return synchronously are called in the same tick
 * and the outcome comes back as a plain value, so no timer or promise is spent on them (a synchronous
 * handler cannot be timed out anyway); from the first pending result on, the rest run asynchronously,
 * and what comes back is a promise that fulfils when all are done and rejects with the first failure.
 */
function runInOrder(
  handlers: readonly WebhookHandler<WebhookEvent>[],
  event: WebhookEvent,
  context: HandlerContext,
): HandlerOutcome | Promise<unknown> {
  for (let index = 0; index < handlers.length; index++) {
    let result: unknown;
    try {
      result = handlers[index]!(event, context);
    } catch (cause) {
      return { failed: true, cause };
    }
    if (isThenable(result)) {
      // The last (usually the only) handler's own promise will do: no async function around it.
      return index === handlers.length - 1
        ? Promise.resolve(result)
        : finishInOrder(result, handlers, index + 1, event, context);
    }
  }
  return SUCCEEDED;
}

async function finishInOrder(
  pending: PromiseLike<unknown>,
  handlers: readonly WebhookHandler<WebhookEvent>[],
  next: number,
  event: WebhookEvent,
  context: HandlerContext,
): Promise<void> {
  await pending;
  for (let index = next; index < handlers.length; index++) await handlers[index]!(event, context);
}

const toSucceeded = (): HandlerOutcome => SUCCEEDED;
const toFailed = (cause: unknown): HandlerOutcome => ({ failed: true, cause });

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
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
