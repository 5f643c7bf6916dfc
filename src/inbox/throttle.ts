/**
 * Trouble that repeats (a connection refused every second, a poll that keeps failing) is said at most
 * once a minute: the first time at once, then not again until a minute has passed.
 */

/**
 * A gate that opens at most once per `intervalMs`.
 *
 * @example
 * ```ts
 * const trouble = new Throttle();
 * queue.on('error', (err) => { if (trouble.open()) logger.warn({ err }, 'queue connection error'); });
 * ```
 */
export class Throttle {
  readonly #intervalMs: number;
  #last = Number.NEGATIVE_INFINITY;

  constructor(intervalMs = 60_000) {
    this.#intervalMs = intervalMs;
  }

  /** Whether to say it now; when it is, the next minute stays quiet. */
  open(now = Date.now()): boolean {
    if (now - this.#last < this.#intervalMs) return false;
    this.#last = now;
    return true;
  }
}
