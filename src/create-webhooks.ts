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
import { createVerifier, readHeader, SIGNATURE_HEADER, type Verifier } from './signature.js';
import type {
  AnyWebhookEvent,
  DeliveryOutcome,
  ErrorListener,
  EventFor,
  HandleInput,
  HandlerContext,
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
const TIMED_OUT = Symbol('timed out');

class WebhookReceiver implements Webhooks {
  readonly #options: ResolvedOptions;
  readonly #verify: Verifier;
  /** The default MemoryStore's synchronous calls, when the store is one nobody modified. */
  readonly #memory: ReturnType<typeof syncCalls>;
  readonly #registry = new HandlerRegistry();
  readonly #errorListeners: ErrorListener[] = [];

  constructor(options: WebhooksOptions) {
    this.#options = resolveOptions(options);
    this.#verify = createVerifier(this.#options.secrets);
    // Resolved once: the store is fixed for the receiver's life, so this is not a per-delivery check.
    this.#memory = syncCalls(this.#options.store);
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

  async handle(input: HandleInput): Promise<WebhookResponse> {
    const started = this.#options.logger ? performance.now() : 0;
    if (input.method !== undefined && input.method.toUpperCase() !== 'POST') {
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
    const verified = await this.#verifyAndParse(body, readHeader(input.headers, SIGNATURE_HEADER));
    if (!verified.ok) {
      const { error } = verified;
      const message = error instanceof InvalidRequestError ? error.message : undefined;
      return this.#finish(started, responseFor(error.code as never, message), 'rejected', error.code);
    }
    const timeoutMs =
      input.handlerTimeoutMs !== undefined && input.handlerTimeoutMs < this.#options.handlerTimeoutMs
        ? Math.max(1, Math.floor(input.handlerTimeoutMs))
        : this.#options.handlerTimeoutMs;
    return this.#dispatch(verified.event, verified.secretIndex, timeoutMs, started);
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

  /** Steps 1 to 4 of the order of work; nothing here touches the store or the handlers. */
  async #verifyAndParse(body: RawBody, header: string | undefined): Promise<Verified> {
    const options = this.#options;
    if (exceedsBytes(body, options.maxBodyBytes)) return { ok: false, error: new PayloadTooLargeError() };
    const pending = this.#verify(body, header);
    const check = pending instanceof Promise ? await pending : pending;
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
    if (ageSeconds > options.maxEventAgeSeconds || ageSeconds < -MAX_FUTURE_SKEW_SECONDS) {
      return { ok: false, error: new EventTooOldError() };
    }
    return { ok: true, event, secretIndex: check.secretIndex };
  }

  /** Steps 5 to 8: claim, run, complete or release, answer. */
  async #dispatch(event: WebhookEvent, secretIndex: number, timeoutMs: number, started: number) {
    const handlers = this.#registry.handlersFor(event.type);
    // Nothing to run means nothing to deduplicate: acknowledge without a store round trip.
    if (handlers.length === 0)
      return this.#finish(started, HANDLED, 'handled', undefined, event, secretIndex);

    const { store, leaseSeconds, storeTimeoutMs } = this.#options;
    const memory = this.#memory;
    const token = crypto.randomUUID();
    let claimed = true;
    try {
      const state = memory
        ? memory.claim(event.id, token, leaseSeconds * 1000)
        : await withDeadline(
            store.claim(event.id, token, leaseSeconds * 1000),
            storeTimeoutMs,
            'store.claim',
          );
      if (state === 'completed')
        return this.#finish(started, DUPLICATE, 'duplicate', undefined, event, secretIndex);
      if (state === 'in_progress') {
        const response = responseFor('event_in_progress', undefined, leaseSeconds);
        return this.#finish(started, response, 'rejected', 'event_in_progress', event, secretIndex);
      }
      if (state !== 'claimed') throw new TypeError(`store.claim answered ${JSON.stringify(state)}`);
    } catch (cause) {
      // A claim that timed out may still be carried out later (Redis runs what it was sent); release it
      // now, unawaited, so that it does not hold the event until its lease ends.
      store.release(event.id, token).catch(() => {});
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
      claimed = false;
    }

    const context = new DeliveryContext(secretIndex);
    const handlersStarted = performance.now();
    const running = runInOrder(handlers, event, context);
    let first: HandlerOutcome | typeof TIMED_OUT;
    if (running instanceof Promise) {
      // Only a handler still pending can run out of time; what ran synchronously counts against the budget.
      const remainingMs = Math.max(0, timeoutMs - (performance.now() - handlersStarted));
      let timer: ReturnType<typeof setTimeout> | undefined;
      first = await new Promise<HandlerOutcome | typeof TIMED_OUT>((resolve) => {
        timer = setTimeout(resolve, remainingMs, TIMED_OUT);
        void running.then(resolve);
      });
      clearTimeout(timer);
    } else {
      first = running;
    }

    if (first === TIMED_OUT) {
      const error = new HandlerTimeoutError(timeoutMs);
      context.abort(error);
      this.#report(error, event);
      // The claim stays until the handlers settle, so a retry meanwhile gets 409 rather than a second run.
      if (claimed) void Promise.resolve(running).then((outcome) => this.#settle(event, token, outcome, true));
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
    return this.#settle(event, token, first, claimed, started, secretIndex);
  }

  async #settle(
    event: WebhookEvent,
    token: string,
    outcome: HandlerOutcome,
    claimed: boolean,
    started = 0,
    secretIndex?: number,
  ): Promise<WebhookResponse> {
    const { store, storeTimeoutMs, dedupTtlSeconds } = this.#options;
    const memory = this.#memory;
    if (outcome.failed) {
      const error = new HandlerFailedError(outcome.cause);
      this.#report(error, event);
      if (claimed) {
        try {
          if (memory) memory.release(event.id, token);
          else await withDeadline(store.release(event.id, token), storeTimeoutMs, 'store.release');
        } catch (cause) {
          // The lease still ends by itself before the sender's first retry.
          this.#report(new StoreUnavailableError('The store failed to release the claim.', { cause }), event);
        }
      }
      return this.#finish(
        started,
        responseFor('handler_failed'),
        'failed',
        error.code,
        event,
        secretIndex,
        error,
      );
    }
    if (claimed) {
      try {
        const ttlMs = dedupTtlSeconds * 1000;
        const result = memory
          ? memory.complete(event.id, token, ttlMs)
          : await withDeadline(store.complete(event.id, token, ttlMs), storeTimeoutMs, 'store.complete');
        if (result === 'lost') this.#report(new LeaseLostError(event.id), event);
      } catch (cause) {
        // The handlers did their work: acknowledging is right; the failure to remember it is reported.
        this.#report(
          new StoreUnavailableError('The store failed to record the event as handled.', { cause }),
          event,
        );
      }
    }
    return this.#finish(started, HANDLED, 'handled', undefined, event, secretIndex);
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
 * handler cannot be timed out anyway); from the first pending result on, the rest run asynchronously.
 */
function runInOrder(
  handlers: readonly WebhookHandler<WebhookEvent>[],
  event: WebhookEvent,
  context: HandlerContext,
): HandlerOutcome | Promise<HandlerOutcome> {
  for (let index = 0; index < handlers.length; index++) {
    let result: unknown;
    try {
      result = handlers[index]!(event, context);
    } catch (cause) {
      return { failed: true, cause };
    }
    if (isThenable(result)) return finishInOrder(result, handlers, index + 1, event, context);
  }
  return SUCCEEDED;
}

async function finishInOrder(
  pending: PromiseLike<unknown>,
  handlers: readonly WebhookHandler<WebhookEvent>[],
  next: number,
  event: WebhookEvent,
  context: HandlerContext,
): Promise<HandlerOutcome> {
  try {
    await pending;
    for (let index = next; index < handlers.length; index++) await handlers[index]!(event, context);
    return SUCCEEDED;
  } catch (cause) {
    return { failed: true, cause };
  }
}

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
