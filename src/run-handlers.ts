import { now } from './clock.js';
import { HandlerFailedError, HandlerTimeoutError, type WebhookError } from './errors.js';
import { isThenable } from './eventual.js';
import type { TimeoutQueue } from './timeout-queue.js';
import type { HandlerContext, WebhookEvent, WebhookHandler } from './types.js';

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

/**
 * The handler context. Its AbortController is built only when a handler reads `signal`, which most
 * never do: creating one costs more than the rest of the dispatch together (EventTarget set-up and
 * the garbage it leaves). A signal first read after the timeout is already aborted, with the same
 * reason. `signal` is a getter on the prototype (a getter defined per object is as slow as the
 * controller itself), so it is read, destructured and passed on as before, but not copied by a spread.
 */
export class DeliveryContext implements HandlerContext {
  readonly secretIndex: number;
  readonly attempt: number;
  readonly receivedAt: number;
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;

  constructor(secretIndex: number, attempt: number, receivedAt: number) {
    this.secretIndex = secretIndex;
    this.attempt = attempt;
    this.receivedAt = receivedAt;
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

/**
 * Run the handlers one after another. Handlers that return synchronously are called in the same tick
 * and the outcome comes back as a plain value, so no timer or promise is spent on them (a synchronous
 * handler cannot be timed out anyway); from the first pending result on, the rest run asynchronously,
 * and what comes back is a promise that fulfils when all are done and rejects with the first failure.
 */
export function runInOrder(
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
 * rest of the run still to settle.
 */
export function runHandlersWithin<C, R>(
  handlers: readonly WebhookHandler<WebhookEvent>[],
  event: WebhookEvent,
  context: DeliveryContext,
  timeoutMs: number,
  timeouts: TimeoutQueue,
  then: (thenContext: C, outcome: HandlerOutcome) => R | Promise<R>,
  thenContext: C,
): R | Promise<R> {
  const started = now();
  const running = runInOrder(handlers, event, context);
  if (!(running instanceof Promise)) return then(thenContext, running);
  return new Promise<R>((resolve) => {
    // Only a handler still pending can run out of time; what ran synchronously counts against the budget.
    const timeout = timeouts.add(
      () => {
        const error = new HandlerTimeoutError(timeoutMs);
        context.abort(error);
        settleWith(resolve, then, thenContext, {
          kind: 'timed_out',
          error,
          rest: running.then(toSucceeded, toFailed),
        });
      },
      started,
      timeoutMs,
    );
    running.then(
      () => {
        if (timeouts.cancel(timeout)) settleWith(resolve, then, thenContext, SUCCEEDED);
      },
      (cause: unknown) => {
        if (timeouts.cancel(timeout)) settleWith(resolve, then, thenContext, toFailed(cause));
      },
    );
  });
}

/**
 * Resolve with what `then` makes of the outcome. It runs inside a promise reaction: were it to throw
 * (a bug), the reaction's own promise would reject unobserved and the delivery's never settle,
 * leaving the sender without an answer. A throw becomes the delivery's rejection instead, which the
 * receiver answers 500 internal_error. A plain function, not a closure: it runs once per delivery.
 */
function settleWith<C, R>(
  resolve: (value: R | Promise<R>) => void,
  then: (thenContext: C, outcome: HandlerOutcome) => R | Promise<R>,
  thenContext: C,
  outcome: HandlerOutcome,
): void {
  try {
    resolve(then(thenContext, outcome));
  } catch (error) {
    resolve(Promise.reject(error));
  }
}
