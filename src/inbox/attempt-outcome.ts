/**
 * What an engine's worker does after one run of `webhooks.process`, whatever the engine: the same
 * verdicts on BullMQ, SQS and pg-boss, so an event fares alike on each.
 */
import {
  EventInProgressError,
  EventSchemaError,
  InvalidInboxEntryError,
  type ProcessResult,
  ResourceBusyError,
  rateLimitedIn,
  WebhookError,
} from 'service-webhooks/core';
import type { Schedule } from './backoff.js';

/**
 * - `done`: handled, or a duplicate of a handled event: remove it from the queue.
 * - `defer`: another run holds the event's claim (a worker handling it now, or one that died and whose
 *   lease has not ended; `reason: 'held'`), with the `ordering` option its resource (another event of
 *   it is being handled; `'held'` too), or a handler threw `RateLimitedError` (`'downstream'`).
 *   Not this event's failure, so no attempt is spent: come back after `delayMs`.
 * - `retry`: the attempt failed; run it again after `delayMs`.
 * - `dead-letter`: the last attempt failed, or the entry is poison (no event, an envelope the door
 *   would refuse, an event its schema refuses), which no retry can fix: dead-letter it now, with
 *   `reason` and the failure.
 */
export type AttemptOutcome =
  | { readonly kind: 'done'; readonly result: ProcessResult }
  | { readonly kind: 'defer'; readonly delayMs: number; readonly reason: 'held' | 'downstream' }
  | { readonly kind: 'retry'; readonly delayMs: number; readonly error: unknown }
  | { readonly kind: 'dead-letter'; readonly reason: 'poison' | 'last-attempt'; readonly error: unknown };

/** A held event is looked at again after the holder's lease, give or take a fifth (so the waiters spread). */
const HELD_FALLBACK_SECONDS = 5;

/** A busy resource (the `ordering` option) is looked at again after at most this long. */
const BUSY_RESOURCE_RECHECK_SECONDS = 1;

/**
 * Judge a failed run. `attempt` counts from 1 and excludes deferrals; `retries` is the worker's
 * schedule (`delayMs(n)` after the n-th failure).
 */
export function judgeFailure(
  error: unknown,
  attempt: number,
  attempts: number,
  retries: Schedule,
  random: () => number = Math.random,
): Exclude<AttemptOutcome, { kind: 'done' }> {
  if (isPoison(error)) return { kind: 'dead-letter', reason: 'poison', error };
  if (error instanceof ResourceBusyError) {
    // Another event of the resource holds it for as long as its handlers run, which is mostly far
    // less than the lease left: look again soon, not after the whole lease.
    const seconds = Math.min(error.retryAfterSeconds, BUSY_RESOURCE_RECHECK_SECONDS);
    return { kind: 'defer', delayMs: Math.round(seconds * 1000 * (1 + 0.2 * random())), reason: 'held' };
  }
  if (error instanceof EventInProgressError) {
    const seconds = error.retryAfterSeconds ?? HELD_FALLBACK_SECONDS;
    return { kind: 'defer', delayMs: Math.round(seconds * 1000 * (1 + 0.2 * random())), reason: 'held' };
  }
  const limited = rateLimitedIn(error);
  if (limited) {
    // Never earlier than the downstream asked; up to a fifth later, so entries limited together spread.
    return {
      kind: 'defer',
      delayMs: Math.round(limited.retryAfterMs * (1 + 0.2 * random())),
      reason: 'downstream',
    };
  }
  if (attempt >= attempts) return { kind: 'dead-letter', reason: 'last-attempt', error };
  return { kind: 'retry', delayMs: retries.delayMs(attempt, random), error };
}

/** An entry no retry can fix: dead-letter it at once rather than spend every attempt over days. */
export function isPoison(error: unknown): boolean {
  return error instanceof InvalidInboxEntryError || error instanceof EventSchemaError;
}

/**
 * `code: what happened`, with the handler's own message when it threw, and the stack of what threw:
 * what a dead letter's `lastError` and `inbox show` say.
 */
export function describeFailure(error: unknown): { message: string; stack: string | undefined } {
  if (error instanceof WebhookError) {
    const cause = error.cause;
    try {
      const detail =
        cause instanceof Error ? cause.message : cause === undefined ? error.message : String(cause);
      return {
        message: `${error.code}: ${detail}`,
        stack: cause instanceof Error ? cause.stack : error.stack,
      };
    } catch {
      // A cause that cannot be read (a schema threw a null-prototype object or a revoked Proxy):
      // the error's own message, which the core wrote, says what it could of it.
      return { message: `${error.code}: ${error.message}`, stack: error.stack };
    }
  }
  if (error instanceof Error) return { message: error.message, stack: error.stack };
  return { message: String(error), stack: undefined };
}
