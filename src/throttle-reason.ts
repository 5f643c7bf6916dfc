/** Why an inbox worker held an entry back: its own module, since telemetry and flow control both name it. */

/**
 * Why a worker held an entry back: its `rate`, its `concurrencyPerKey`, a handler's
 * `RateLimitedError` (`downstream`), or the shared state out of reach (`unavailable`).
 *
 * @example
 * ```ts
 * const reason: ThrottleReason = 'rate';
 * ```
 */
export type ThrottleReason = 'rate' | 'key' | 'downstream' | 'unavailable';
