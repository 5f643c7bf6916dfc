import type { HandlerContext, WebhookEvent, WebhookHandler } from './types.js';

/** How the handlers of one delivery ended. */
export type HandlerOutcome = { readonly failed: false } | { readonly failed: true; readonly cause: unknown };

export const SUCCEEDED: HandlerOutcome = Object.freeze({ failed: false });

export const toSucceeded = (): HandlerOutcome => SUCCEEDED;
export const toFailed = (cause: unknown): HandlerOutcome => ({ failed: true, cause });

/**
 * The handler context. Its AbortController is built only when a handler reads `signal`, which most
 * never do: creating one costs more than the rest of the dispatch together (EventTarget set-up and
 * the garbage it leaves). A signal first read after the timeout is already aborted, with the same
 * reason. `signal` is a getter on the prototype (a getter defined per object is as slow as the
 * controller itself), so it is read, destructured and passed on as before, but not copied by a spread.
 */
export class DeliveryContext implements HandlerContext {
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

/** Whether a value is a promise or another thenable, which observers and handlers may return. */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
