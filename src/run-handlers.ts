import { now } from './clock.js';
import { HandlerFailedError, HandlerTimeoutError, type WebhookError } from './errors.js';
import { isThenable } from './eventual.js';
import type { HandlerStep } from './handler-step.js';
import type { PendingTimeout, TimeoutQueue } from './timeout-queue.js';
import type { HandlerContext, TenantHandlerContext, WebhookEvent, WebhookHandler } from './types.js';

/**
 * How the handlers of one delivery (or the work that stands in for them, an inbox write) ended:
 * succeeded, failed with the error to answer, or still running past their budget, in which case the
 * answer goes out now and `rest` settles when they do.
 */
export type HandlerOutcome =
  | { readonly kind: 'succeeded' }
  | { readonly kind: 'failed'; readonly error: WebhookError }
  | { readonly kind: 'timed_out'; readonly error: WebhookError; readonly rest: Promise<HandlerOutcome> };

/** Shared: success carries nothing, so it costs no object per delivery. */
export const SUCCEEDED: HandlerOutcome = Object.freeze({ kind: 'succeeded' });

const toSucceeded = (): HandlerOutcome => SUCCEEDED;
const toFailed = (cause: unknown): HandlerOutcome => ({
  kind: 'failed',
  error: new HandlerFailedError(cause),
});

/** A context's abort reason before any: a value no caller can pass. */
const NOT_ABORTED: unique symbol = Symbol('not aborted');

/**
 * The handler context. Its AbortController is built only when a handler reads `signal`, which most
 * never do: creating one costs more than the rest of the dispatch together (EventTarget set-up and
 * the garbage it leaves). A signal first read after the timeout is already aborted, with the same
 * reason. `signal` is a getter on the prototype (a getter defined per object is as slow as the
 * controller itself), so it is read, destructured and passed on as before, but not copied by a spread.
 */
export class DeliveryContext implements HandlerContext {
  declare readonly secretIndex: number;
  declare readonly attempt: number;
  declare readonly receivedAt: number;
  #controller: AbortController | undefined;
  /** Why the handlers were aborted, or {@link NOT_ABORTED}: one field for both, as one is made per delivery. */
  #reason: unknown = NOT_ABORTED;

  constructor(secretIndex: number, attempt: number, receivedAt: number) {
    this.secretIndex = secretIndex;
    this.attempt = attempt;
    this.receivedAt = receivedAt;
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#reason !== NOT_ABORTED) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  abort(reason: unknown): void {
    this.#reason = reason;
    this.#controller?.abort(reason);
  }

  /**
   * Abort with `signal` (a worker's shutdown or a cancelled job). A worker may pass one signal to every
   * run, so the listener is removed by what this answers, once the run has ended.
   */
  follow(signal: AbortSignal): (() => void) | undefined {
    if (signal.aborted) {
      this.abort(signal.reason);
      return undefined;
    }
    const onAbort = () => this.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    return () => signal.removeEventListener('abort', onAbort);
  }
}

/** The context of a receiver with `tenant`: the tenant the delivery came for, besides the rest. */
export class TenantDeliveryContext extends DeliveryContext implements TenantHandlerContext {
  declare readonly tenant: string;

  constructor(secretIndex: number, attempt: number, receivedAt: number, tenant: string) {
    super(secretIndex, attempt, receivedAt);
    this.tenant = tenant;
  }
}

/**
 * Run the handlers one after another. Handlers that return synchronously are called in the same tick
 * and the outcome comes back as a plain value, so no timer or promise is spent on them (a synchronous
 * handler cannot be timed out anyway); from the first pending result on, the rest run asynchronously,
 * and what comes back is a promise that fulfils when all are done and rejects with the first failure.
 */
// biome-ignore format: the parentheses make V8 compile it with the module, not on the first delivery
export const runInOrder = (function runInOrder(
  handlers: readonly WebhookHandler<WebhookEvent>[],
  event: WebhookEvent,
  context: HandlerContext,
): HandlerOutcome | Promise<unknown> {
  for (let index = 0; index < handlers.length; index++) {
    let result: unknown;
    try {
      result = handlers[index]!(event, context);
    } catch (cause) {
      return toFailed(cause);
    }
    if (isThenable(result)) {
      // The last (usually the only) handler's own promise will do: no async function around it.
      return index === handlers.length - 1
        ? Promise.resolve(result)
        : finishInOrder(result, handlers, index + 1, event, context);
    }
  }
  return SUCCEEDED;
});

/** Told of each handler as it settles (see {@link runObserved}). */
export type StepObserver = (step: HandlerStep) => void;

function stepOf(
  handlers: readonly WebhookHandler<WebhookEvent>[],
  index: number,
  outcome: HandlerStep['outcome'],
  started: number,
): HandlerStep {
  return {
    index,
    name: handlers[index]!.name || 'anonymous',
    outcome,
    durationMs: Math.round((now() - started) * 1000) / 1000,
  };
}

/**
 * {@link runInOrder}, telling `observe` of each handler as it settles: the path taken only when a
 * telemetry plug-in or a logger asked for the steps, so the usual one times nothing.
 */
export function runObserved(
  handlers: readonly WebhookHandler<WebhookEvent>[],
  event: WebhookEvent,
  context: HandlerContext,
  observe: StepObserver,
): HandlerOutcome | Promise<unknown> {
  for (let index = 0; index < handlers.length; index++) {
    const started = now();
    let result: unknown;
    try {
      result = handlers[index]!(event, context);
    } catch (cause) {
      observe(stepOf(handlers, index, 'failed', started));
      return toFailed(cause);
    }
    if (isThenable(result)) return finishObserved(result, started, handlers, index, event, context, observe);
    observe(stepOf(handlers, index, 'succeeded', started));
  }
  return SUCCEEDED;
}

async function finishObserved(
  first: PromiseLike<unknown>,
  firstStarted: number,
  handlers: readonly WebhookHandler<WebhookEvent>[],
  firstIndex: number,
  event: WebhookEvent,
  context: HandlerContext,
  observe: StepObserver,
): Promise<void> {
  let pending: unknown = first;
  let started = firstStarted;
  for (let index = firstIndex; ; ) {
    try {
      await pending;
    } catch (cause) {
      observe(stepOf(handlers, index, 'failed', started));
      throw cause;
    }
    observe(stepOf(handlers, index, 'succeeded', started));
    if (++index >= handlers.length) return;
    started = now();
    try {
      pending = handlers[index]!(event, context);
    } catch (cause) {
      observe(stepOf(handlers, index, 'failed', started));
      throw cause;
    }
  }
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

/**
 * Run the handlers within `timeoutMs` and give their outcome to `then`: at once when they all
 * returned synchronously (a synchronous handler cannot be timed out anyway), else from the promise
 * returned, which `then`'s result settles (no promise is spent in between). At the timeout the
 * context's signal is aborted with a `HandlerTimeoutError` and the outcome is `timed_out`, with the
 * rest of the run still to settle. With `observe`, each handler is timed and told to it as it settles.
 * With `failed`, what `then` throws or rejects with (a bug) becomes `failed`'s answer, so the promise
 * returned never rejects; without it, that promise rejects.
 */
// biome-ignore format: the parentheses make V8 compile it with the module, not on the first delivery
export const runHandlersWithin = (function runHandlersWithin<C, R>(
  handlers: readonly WebhookHandler<WebhookEvent>[],
  event: WebhookEvent,
  context: DeliveryContext,
  timeoutMs: number,
  timeouts: TimeoutQueue,
  then: (thenContext: C, outcome: HandlerOutcome) => R | Promise<R>,
  thenContext: C,
  observe?: StepObserver,
  failed?: (thenContext: C, cause: unknown) => R,
): R | Promise<R> {
  const started = now();
  const running = observe
    ? runObserved(handlers, event, context, observe)
    : runInOrder(handlers, event, context);
  if (!(running instanceof Promise)) return then(thenContext, running);
  const answer = new Promise<R>(handOver);
  const pending = new PendingHandlers<C, R>(
    handedOver as (value: R | Promise<R>) => void,
    then,
    thenContext,
    running,
    context,
    timeoutMs,
    failed,
    timeouts,
  );
  handedOver = undefined;
  // Only a handler still pending can run out of time; what ran synchronously counts against the budget.
  timeouts.schedule(pending, started, timeoutMs);
  // Two functions shared by every delivery, bound to its entry: two closures and the context they
  // shared were about 80 bytes more per delivery.
  running.then((handlersFulfilled<C, R>).bind(pending), (handlersRejected<C, R>).bind(pending));
  return answer;
});

/** The handlers' promise fulfilled before their timeout: the outcome is a success. */
function handlersFulfilled<C, R>(this: PendingHandlers<C, R>): void {
  if (this.timeouts.cancel(this)) this.settle(SUCCEEDED);
}

/** The handlers' promise rejected before their timeout: the outcome is its failure. */
function handlersRejected<C, R>(this: PendingHandlers<C, R>, cause: unknown): void {
  if (this.timeouts.cancel(this)) this.settle(toFailed(cause));
}

/**
 * The `resolve` of the promise being made, handed over by {@link handOver}: the Promise constructor
 * calls its executor synchronously, so a function shared by every delivery can hand it over where a
 * closure made per delivery would capture it.
 */
let handedOver: ((value: never) => void) | undefined;
const handOver = (resolve: (value: never) => void): void => {
  handedOver = resolve;
};

/**
 * Handlers still running after their synchronous part: what their timeout and their end need, in one
 * object that is also their entry in the timeout queue. A closure for the timeout, its queue entry and
 * the promise executor's closure were three objects per delivery more.
 */
class PendingHandlers<C, R> implements PendingTimeout {
  declare deadline: number;
  declare onTimeout: ((entry: PendingTimeout) => void) | undefined;
  declare previous: PendingTimeout | undefined;
  declare next: PendingTimeout | undefined;
  declare readonly resolve: (value: R | Promise<R>) => void;
  declare readonly onOutcome: (thenContext: C, outcome: HandlerOutcome) => R | Promise<R>;
  declare readonly outcomeContext: C;
  declare readonly running: Promise<unknown>;
  declare readonly context: DeliveryContext;
  declare readonly timeoutMs: number;
  declare readonly onFailure: ((thenContext: C, cause: unknown) => R) | undefined;
  /** The queue this entry is in, which the handlers' settling cancels it from. */
  declare readonly timeouts: TimeoutQueue;

  // Plain assignments in one fixed order, as `Run`'s: made per delivery.
  constructor(
    resolve: (value: R | Promise<R>) => void,
    then: (thenContext: C, outcome: HandlerOutcome) => R | Promise<R>,
    thenContext: C,
    running: Promise<unknown>,
    context: DeliveryContext,
    timeoutMs: number,
    onFailure: ((thenContext: C, cause: unknown) => R) | undefined,
    timeouts: TimeoutQueue,
  ) {
    this.deadline = 0;
    this.onTimeout = timedOut;
    this.previous = undefined;
    this.next = undefined;
    this.resolve = resolve;
    this.onOutcome = then;
    this.outcomeContext = thenContext;
    this.running = running;
    this.context = context;
    this.timeoutMs = timeoutMs;
    this.onFailure = onFailure;
    this.timeouts = timeouts;
  }

  /**
   * Resolve with what `onOutcome` makes of the outcome. It runs inside a promise reaction or the timer:
   * were it to throw (a bug), the delivery's promise would never settle, leaving the sender without an
   * answer. A throw, or a rejection of what it returns, becomes `onFailure`'s answer (the receiver's
   * 500 internal_error) where one was given, so the delivery's promise never rejects; else the
   * delivery's rejection.
   */
  settle(outcome: HandlerOutcome): void {
    const onFailure = this.onFailure;
    let answer: R | Promise<R>;
    try {
      answer = this.onOutcome(this.outcomeContext, outcome);
    } catch (error) {
      this.resolve(this.#failed(error));
      return;
    }
    // Mapped only where the answer can still fail: a promise (a store that waits).
    this.resolve(
      onFailure !== undefined && answer instanceof Promise
        ? answer.then(undefined, (cause: unknown) => this.#failed(cause))
        : answer,
    );
  }

  #failed(cause: unknown): R | Promise<R> {
    const onFailure = this.onFailure;
    if (onFailure === undefined) return Promise.reject(cause);
    try {
      return onFailure(this.outcomeContext, cause);
    } catch (error) {
      return Promise.reject(error);
    }
  }
}

/** The timeout of every pending run: one function, given the run's entry. */
function timedOut(entry: PendingTimeout): void {
  const pending = entry as PendingHandlers<unknown, unknown>;
  const error = new HandlerTimeoutError(pending.timeoutMs);
  pending.context.abort(error);
  pending.settle({ kind: 'timed_out', error, rest: pending.running.then(toSucceeded, toFailed) });
}
