/**
 * The receiver's own retry schedule: how long a worker waits before the next attempt at an event
 * whose handlers failed. Days rather than the sender's 21 minutes, so a downstream outage of a
 * weekend does not lose events.
 */
import { ConfigurationError, INBOX_DEFAULTS, type InboxBackoff } from 'service-webhooks/core';

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
