/**
 * The service's delivery schedule (SERVICE-SPEC "Webhooks"), in one place: the receiver's defaults and
 * limits, the `Retry-After` of its answers, and the sandbox's delivery scheduler and help texts all
 * derive from these numbers, so a change to the schedule is a change here only.
 *
 * @example
 * ```ts
 * import { SENDER_SCHEDULE } from 'service-webhooks';
 *
 * // A lease must end before the sender's first retry.
 * const leaseSeconds = SENDER_SCHEDULE.retryDelaysSeconds[0] - 15;
 * ```
 */
export const SENDER_SCHEDULE = Object.freeze({
  /** The sender abandons an attempt after this long, and counts it as failed. */
  attemptTimeoutMs: 30_000,
  /** The sender's retries come this long after the attempt before (1, 5 and 15 minutes). */
  retryDelaysSeconds: Object.freeze([60, 300, 900] as const),
});

/** Every attempt of one event: the first and each retry. */
export const SENDER_MAX_ATTEMPTS = SENDER_SCHEDULE.retryDelaysSeconds.length + 1;

/**
 * From a first attempt to the end of the last one: past this the sender never delivers the event
 * again (only a replay could), so nothing is gained by holding a claim longer.
 */
export const SENDER_RETRY_SPAN_MS =
  SENDER_SCHEDULE.retryDelaysSeconds.reduce((sum, seconds) => sum + seconds * 1000, 0) +
  SENDER_MAX_ATTEMPTS * SENDER_SCHEDULE.attemptTimeoutMs;
