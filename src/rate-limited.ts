/**
 * A handler's way to say "the API I call answered 429": `RateLimitedError`, and the helper that reads
 * how long to wait from the answer's headers. An inbox worker defers such an entry for that long
 * without spending an attempt (see `judgeFailure` in `src/inbox/attempt-outcome.ts`); a receiver
 * without an inbox answers the sender `503 rate_limited` with that wait as `Retry-After`.
 */
import { WebhookError } from './errors.js';

/**
 * The longest wait a `RateLimitedError` keeps: one hour. The service's own limits are counted per
 * hour (100 or 1,000 requests), so a legitimate `Retry-After` never asks for more; a larger value is
 * a misread header (a Unix time taken for a delay, a date in a wrong year) and would park events for
 * days. Past the cap the entry runs again, and a downstream still limited answers 429 once more with
 * a fresh wait: one call spent, no event stuck.
 */
export const RATE_LIMIT_MAX_WAIT_MS = 3_600_000;

/** The shortest: a `Retry-After: 0` (or a reset already past) must not become a loop of calls. */
export const RATE_LIMIT_MIN_WAIT_MS = 1_000;

/** The wait when the answer says nothing usable: a minute, a common window of per-minute limits. */
export const RATE_LIMIT_DEFAULT_WAIT_MS = 60_000;

/**
 * A Unix time in seconds is at least this (September 2001); a smaller `X-RateLimit-Reset` is a delay
 * in seconds. The service's spec says "integer time value" without a unit, so both are read.
 */
const UNIX_SECONDS_FROM = 1_000_000_000;

/**
 * Thrown by a handler whose downstream answered 429 (rate limited). An inbox worker defers the entry
 * for `retryAfterMs` (bounded from {@link RATE_LIMIT_MIN_WAIT_MS} to {@link RATE_LIMIT_MAX_WAIT_MS},
 * plus up to a fifth of it so entries limited together do not return together) and runs it again
 * with the same `ctx.attempt`: a wait is not a failure, and never dead-letters the event. In a
 * receiver without an inbox the claim is released as after any handler failure (`onError` hears a
 * `HandlerFailedError` whose `cause` is this), and the sender is answered `503 rate_limited` with
 * `Retry-After` the wait in whole seconds, rounded up: the event was not handled, and a retry after
 * that runs its handlers again. `code` is `rate_limited`.
 *
 * @example
 * ```ts
 * import { RateLimitedError } from 'service-webhooks';
 *
 * webhooks.on('payment.succeeded', async (event) => {
 *   const answer = await fetch('https://crm.example/contacts', { method: 'POST', body: JSON.stringify(event.data) });
 *   if (answer.status === 429) throw new RateLimitedError(30_000);
 * });
 * ```
 */
export class RateLimitedError extends WebhookError {
  override name = 'RateLimitedError';
  /** How long to wait before the next run, in milliseconds, bounded as the class says. */
  readonly retryAfterMs: number;

  constructor(retryAfterMs: number, options?: { cause?: unknown }) {
    const wait = boundWait(retryAfterMs);
    super('rate_limited', `The handler's downstream is rate limited; retry after ${wait} ms.`, options);
    this.retryAfterMs = wait;
  }
}

/** What {@link rateLimitedError} reads the wait from: a fetch `Response`, or its headers. */
export type RateLimitAnswer =
  | { readonly headers: Headers | Readonly<Record<string, string | readonly string[] | undefined>> }
  | Headers
  | Readonly<Record<string, string | readonly string[] | undefined>>;

/**
 * A {@link RateLimitedError} from a 429 answer's headers: `Retry-After` (seconds, or an HTTP date),
 * else `X-RateLimit-Reset` (the service's header, an integer whose unit its spec leaves open: a value
 * from 1,000,000,000 up is read as a Unix time in seconds, a smaller one as seconds to wait), else a
 * minute. Takes a fetch `Response`, a `Headers`, or a plain object of headers (Node's `IncomingMessage`
 * headers, axios's, got's).
 *
 * @example
 * ```ts
 * import { rateLimitedError } from 'service-webhooks';
 *
 * webhooks.on('payment.succeeded', async (event) => {
 *   const answer = await fetch('https://api.service.example/v1/accounts', { headers: { authorization } });
 *   if (answer.status === 429) throw rateLimitedError(answer);
 * });
 * ```
 */
export function rateLimitedError(answer: RateLimitAnswer, now = Date.now()): RateLimitedError {
  const headers = 'headers' in answer && typeof answer.headers === 'object' ? answer.headers : answer;
  const read = (name: string) => headerOf(headers as RateLimitAnswer, name);
  const wait =
    retryAfterMs(read('retry-after'), now) ??
    resetMs(read('x-ratelimit-reset'), now) ??
    RATE_LIMIT_DEFAULT_WAIT_MS;
  return new RateLimitedError(wait);
}

/**
 * The `RateLimitedError` a run's failure carries: as thrown, or as the cause of the run's
 * `HandlerFailedError`, or a few causes deeper (a handler may wrap it in its client's own error class).
 * What the inbox workers defer on and what the request's answer reads its `Retry-After` from.
 */
export function rateLimitedIn(error: unknown): RateLimitedError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    if (current instanceof RateLimitedError) return current;
    current = current.cause;
  }
  return undefined;
}

function boundWait(ms: number): number {
  if (typeof ms !== 'number' || Number.isNaN(ms)) return RATE_LIMIT_DEFAULT_WAIT_MS;
  return Math.round(Math.min(RATE_LIMIT_MAX_WAIT_MS, Math.max(RATE_LIMIT_MIN_WAIT_MS, ms)));
}

function headerOf(headers: RateLimitAnswer, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers as Record<string, unknown>)) {
    if (key.toLowerCase() !== name) continue;
    const first = Array.isArray(value) ? value[0] : value;
    return typeof first === 'string' ? first : undefined;
  }
  return undefined;
}

/** `Retry-After`: whole seconds (RFC 9110), or an HTTP date. */
function retryAfterMs(value: string | undefined, now: number): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : date - now;
}

/** `X-RateLimit-Reset`: a Unix time in seconds, or seconds to wait (see {@link rateLimitedError}). */
function resetMs(value: string | undefined, now: number): number | undefined {
  const text = value?.trim();
  if (!text || !/^\d+(\.\d+)?$/.test(text)) return undefined;
  const seconds = Number(text);
  return seconds >= UNIX_SECONDS_FROM ? seconds * 1000 - now : seconds * 1000;
}
