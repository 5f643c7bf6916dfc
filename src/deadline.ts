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
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineExceeded(what, ms)), ms);
    (timer as { unref?: () => void }).unref?.();
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
