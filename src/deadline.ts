/** Raised when a store call misses its deadline. */
export class DeadlineExceeded extends Error {
  override name = 'DeadlineExceeded';
  constructor(what: string, ms: number) {
    super(`${what} did not answer within ${ms} ms.`);
  }
}

/**
 * Settle with `promise`, or reject with DeadlineExceeded after `ms`. The timer is unref'd where the
 * runtime allows so a pending store call never keeps a process alive.
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  // One promise and two reactions rather than Promise.race and finally: this runs twice per delivery.
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new DeadlineExceeded(what, ms)), ms);
    (timer as { unref?: () => void }).unref?.();
    // Promise.resolve returns a native promise as it is, and adopts a thenable or a plain value as race did.
    Promise.resolve(promise).then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
