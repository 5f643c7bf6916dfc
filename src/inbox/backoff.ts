/**
 * The receiver's own retry schedule: how long a worker waits before the next attempt at an event
 * whose handlers failed. Days rather than the sender's 21 minutes, so a downstream outage of a
 * weekend does not lose events.
 */
import { ConfigurationError } from 'service-webhooks/core';

/**
 * The delays between attempts: an exponential schedule, or the delays themselves.
 *
 * - `{ initialDelayMs, multiplier, maxDelayMs, jitter }`: the n-th retry waits
 *   `initialDelayMs × multiplier^(n-1)`, at most `maxDelayMs`, less up to `jitter` of it at random
 *   (so events that failed together during an outage do not all come back in the same second).
 * - An array of delays in milliseconds: the n-th retry waits the n-th delay, and every retry past
 *   the end of the array the last one.
 *
 * @example
 * ```ts
 * const gentle: InboxBackoff = { initialDelayMs: 30_000, maxDelayMs: 6 * 3_600_000 };
 * const explicit: InboxBackoff = [60_000, 300_000, 3_600_000, 6 * 3_600_000];
 * ```
 */
export type InboxBackoff =
  | {
      /** @default 10_000 */
      readonly initialDelayMs?: number;
      /** @default 2 */
      readonly multiplier?: number;
      /** @default 14_400_000 (4 hours) */
      readonly maxDelayMs?: number;
      /** From 0 (none) to 1. @default 0.1 */
      readonly jitter?: number;
    }
  | readonly number[];

/**
 * The default schedule and attempt limit: retries after 10 s, 20 s, 40 s ... doubling up to 4 hours,
 * 25 attempts in all, the last about 2.4 days after the first.
 *
 * @example
 * ```ts
 * startInboxWorker(webhooks, { connection, attempts: INBOX_DEFAULTS.attempts * 2 });
 * ```
 */
export const INBOX_DEFAULTS = Object.freeze({
  attempts: 25,
  backoff: Object.freeze({ initialDelayMs: 10_000, multiplier: 2, maxDelayMs: 14_400_000, jitter: 0.1 }),
});

/** A schedule checked once, at the worker's start, and its delays without randomness. */
export interface Schedule {
  /** The delay before the retry that follows `failedAttempts` failures (1 after the first). */
  delayMs(failedAttempts: number, random?: () => number): number;
  /** From the first attempt's end to the last attempt's start, without jitter. */
  spanMs(attempts: number): number;
}

/** Check `backoff` (`what` names the caller in errors) and build its schedule. */
export function schedule(backoff: InboxBackoff | undefined, what: string): Schedule {
  if (Array.isArray(backoff)) return listed(backoff as readonly number[], what);
  const options = (backoff ?? {}) as Exclude<InboxBackoff, readonly number[]>;
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError(
      `${what} \`backoff\` must be an array of delays or an object; got ${String(backoff)}.`,
    );
  }
  const defaults = INBOX_DEFAULTS.backoff;
  const initial = options.initialDelayMs ?? defaults.initialDelayMs;
  const multiplier = options.multiplier ?? defaults.multiplier;
  const max = options.maxDelayMs ?? defaults.maxDelayMs;
  const jitter = options.jitter ?? defaults.jitter;
  check(initial >= 0, `${what} \`backoff.initialDelayMs\` must be a number of milliseconds ≥ 0`, initial);
  check(multiplier >= 1, `${what} \`backoff.multiplier\` must be a number ≥ 1`, multiplier);
  check(max >= initial, `${what} \`backoff.maxDelayMs\` must be a number ≥ initialDelayMs`, max);
  check(jitter >= 0 && jitter <= 1, `${what} \`backoff.jitter\` must be a number from 0 to 1`, jitter);
  const base = (n: number) => Math.min(max, initial * multiplier ** Math.max(0, n - 1));
  return {
    delayMs: (n, random = Math.random) => Math.round(base(n) * (1 - jitter * random())),
    spanMs: (attempts) => sum(attempts, base),
  };
}

function listed(delays: readonly number[], what: string): Schedule {
  if (delays.length === 0) throw new ConfigurationError(`${what} \`backoff\` must list at least one delay.`);
  for (const delay of delays) check(delay >= 0, `${what} \`backoff\` delays must be milliseconds ≥ 0`, delay);
  const base = (n: number) => delays[Math.min(delays.length, Math.max(1, n)) - 1]!;
  return { delayMs: (n) => base(n), spanMs: (attempts) => sum(attempts, base) };
}

function sum(attempts: number, delay: (n: number) => number): number {
  let total = 0;
  for (let n = 1; n < attempts; n++) total += delay(n);
  return total;
}

function check(ok: boolean, message: string, value: unknown): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || !ok) {
    throw new ConfigurationError(`${message}; got ${String(value)}.`);
  }
}
