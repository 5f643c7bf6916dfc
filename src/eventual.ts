/**
 * A value now, or a promise of it when the step had to wait. The receiver's steps answer synchronously
 * when they can (node:crypto, the memory store, a synchronous handler) and return a promise only when
 * they must wait, so a delivery costs one promise, not one per step. `chain` is the one idiom
 * that joins such steps.
 */
export type Eventual<T> = T | Promise<T>;

/**
 * `next(context, value)` now when `value` is here, else once it fulfils; `failed(context, cause)` when
 * it rejects. Like `Promise.prototype.then`, `failed` does not see what `next` throws. The context is
 * passed rather than closed over, so that the synchronous path, the one that matters for speed,
 * allocates nothing: `next` and `failed` are methods bound once, not closures made per delivery.
 */
// biome-ignore format: the parentheses make V8 compile it with the module, not on the first delivery
export const chain = (function chain<C, T, R>(
  value: Eventual<T>,
  context: C,
  next: (context: C, value: T) => Eventual<R>,
  failed?: (context: C, cause: unknown) => Eventual<R>,
): Eventual<R> {
  if (!(value instanceof Promise)) return next(context, value);
  return value.then(
    (resolved) => next(context, resolved),
    failed && ((cause: unknown) => failed(context, cause)),
  );
});

/** Call `call`, turning a synchronous throw into a rejection, as stores and engines may do either. */
// biome-ignore format: the parentheses make V8 compile it with the module, not on the first delivery
export const settled = (function settled<T>(call: () => Eventual<T>): Eventual<T> {
  try {
    return call();
  } catch (cause) {
    return Promise.reject(cause);
  }
});

/** Whether a value is a promise or another thenable, which observers and handlers may return. */
// biome-ignore format: the parentheses make V8 compile it with the module, not on the first delivery
export const isThenable = (function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
});
