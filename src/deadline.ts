import type { TimeoutQueue } from './timeout-queue.js';

/**
 * Raised when a promise bounded by {@link withDeadline} misses its deadline (a store call, a schema,
 * the inbox gauges' read).
 *
 * @internal Exported by `service-webhooks/core` for the package's own plug-ins only.
 *
 * @example
 * ```ts
 * const late = new DeadlineExceeded('store.claim', 2_000); // "store.claim did not answer within 2000 ms."
 * ```
 */
export class DeadlineExceeded extends Error {
  override name = 'DeadlineExceeded';
  constructor(what: string, ms: number) {
    super(`${what} did not answer within ${ms} ms.`);
  }
}

/**
 * Settle with `promise`, or reject with DeadlineExceeded once a timeout of `deadlines` passes.
 *
 * @internal Exported by `service-webhooks/core` for the package's own plug-ins only.
 *
 * @example
 * ```ts
 * const storeDeadlines = new TimeoutQueue(2_000);
 * const claim = await withDeadline(store.claim(key, token, leaseMs), storeDeadlines, 'store.claim');
 * ```
 */
// biome-ignore format: the parentheses make V8 compile it with the module, not on the first delivery
export const withDeadline = (function withDeadline<T>(
  promise: T | PromiseLike<T>,
  deadlines: TimeoutQueue,
  what: string,
): Promise<T> {
  // One promise and two reactions rather than Promise.race and finally: this runs twice per delivery.
  return new Promise<T>((resolve, reject) => {
    const timeout = deadlines.add(() => reject(new DeadlineExceeded(what, deadlines.ms)));
    // Promise.resolve returns a native promise as it is, and adopts a thenable or a plain value as race did.
    Promise.resolve(promise).then(
      (value) => {
        deadlines.cancel(timeout);
        resolve(value);
      },
      (error: unknown) => {
        deadlines.cancel(timeout);
        reject(error);
      },
    );
  });
});
