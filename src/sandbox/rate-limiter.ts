/** Where one caller stands in its current window. */
export interface RateLimitStatus {
  /** Requests allowed per window. */
  limit: number;
  /** Requests left in this window after this one. */
  remaining: number;
  /** When the window ends, in Unix seconds: the value of `X-RateLimit-Reset`. */
  resetAt: number;
  /** Whether this request may proceed. */
  allowed: boolean;
  /** Whole seconds until the window ends (at least 1): the value of `Retry-After` on a 429. */
  retryAfterSeconds: number;
}

/** How {@link RateLimiter} counts. */
export interface RateLimiterOptions {
  /** Requests per window, per bucket. */
  limit: number;
  /** Window length in milliseconds. */
  windowMs: number;
  /** The clock, injectable for tests. @default Date.now */
  now?: () => number;
}

interface Window {
  startedAt: number;
  used: number;
}

/**
 * A fixed-window counter per bucket (an API key, or the address of callers without a valid key). The
 * window starts at a bucket's first request, so `X-RateLimit-Reset` is the same for every response of
 * one window and a client can sleep until it.
 *
 * @example
 * ```ts
 * const limiter = new RateLimiter({ limit: 100, windowMs: 3_600_000 });
 * const status = limiter.take('key:sk_test_1');
 * if (!status.allowed) response.setHeader('retry-after', String(status.retryAfterSeconds));
 * ```
 */
export class RateLimiter {
  readonly #windows = new Map<string, Window>();
  readonly #now: () => number;
  readonly #options: RateLimiterOptions;

  constructor(options: RateLimiterOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Count one request against `bucket` (unless `count` is false, for requests that are free) and say
   * whether it may proceed.
   */
  take(bucket: string, count = true): RateLimitStatus {
    const now = this.#now();
    let window = this.#windows.get(bucket);
    if (window === undefined || now >= window.startedAt + this.#options.windowMs) {
      this.#forgetExpired(now);
      window = { startedAt: now, used: 0 };
      this.#windows.set(bucket, window);
    }
    const allowed = !count || window.used < this.#options.limit;
    if (count && allowed) window.used++;
    const endsAt = window.startedAt + this.#options.windowMs;
    return {
      limit: this.#options.limit,
      remaining: Math.max(0, this.#options.limit - window.used),
      resetAt: Math.ceil(endsAt / 1000),
      allowed,
      retryAfterSeconds: Math.max(1, Math.ceil((endsAt - now) / 1000)),
    };
  }

  // Only when a new window opens, so the sweep costs nothing on the hot path and memory stays bounded
  // by the callers of one window.
  #forgetExpired(now: number): void {
    for (const [bucket, window] of this.#windows) {
      if (now >= window.startedAt + this.#options.windowMs) this.#windows.delete(bucket);
    }
  }
}
