import { EventInProgressError, InvalidRequestError, ResourceBusyError, STATUS_TABLE } from './errors.js';
import type { Ending } from './guarded-run.js';
import { rateLimitedIn } from './rate-limited.js';
import { SENDER_SCHEDULE } from './sender-schedule.js';
import type { WebhookResponse } from './types.js';

type Code = keyof typeof STATUS_TABLE;

const JSON_TYPE = 'application/json; charset=utf-8';

/** The sender's first retry comes a minute later at the earliest; telling other senders the same is honest. */
const RETRY_AFTER_SECONDS = String(SENDER_SCHEDULE.retryDelaysSeconds[0]);

/** Header added to the 200 that answers a duplicate of a handled event. */
export const DUPLICATE_HEADER = 'x-webhook-duplicate';

function freeze(status: number, headers: Record<string, string>, body: string): WebhookResponse {
  return Object.freeze({ status, headers: Object.freeze(headers), body });
}

/** Answers are built once and shared: they are immutable, and building them per delivery is waste. */
export const HANDLED_RESPONSE: WebhookResponse = freeze(
  200,
  { 'content-type': JSON_TYPE },
  '{"received":true}',
);
export const DUPLICATE_RESPONSE: WebhookResponse = freeze(
  200,
  { 'content-type': JSON_TYPE, [DUPLICATE_HEADER]: 'true' },
  '{"received":true,"duplicate":true}',
);

/**
 * Header added to the 200 that answers a stale event (the `ordering` option's `'latest'`): its
 * handlers did not run, because a newer event of its resource was handled first.
 */
export const STALE_HEADER = 'x-webhook-stale';

export const STALE_RESPONSE: WebhookResponse = freeze(
  200,
  { 'content-type': JSON_TYPE, [STALE_HEADER]: 'true' },
  '{"received":true,"stale":true}',
);

function errorResponse(code: Code, message: string, retryAfter?: string): WebhookResponse {
  const headers: Record<string, string> = { 'content-type': JSON_TYPE };
  if (retryAfter !== undefined) headers['retry-after'] = retryAfter;
  // RFC 9110 §15.5.6: a 405 names the methods the resource supports.
  if (code === 'method_not_allowed') headers.allow = 'POST';
  return freeze(STATUS_TABLE[code].status, headers, JSON.stringify({ error: { code, message } }));
}

const RETRY_AFTER: Partial<Record<Code, string>> = {
  handler_timeout: RETRY_AFTER_SECONDS,
  schema_timeout: RETRY_AFTER_SECONDS,
  store_unavailable: RETRY_AFTER_SECONDS,
  receiver_busy: RETRY_AFTER_SECONDS,
  secret_unavailable: RETRY_AFTER_SECONDS,
  inbox_unavailable: RETRY_AFTER_SECONDS,
  // Only when the wait is unknown, which `answerable` never leaves: the downstream's own wait is sent.
  rate_limited: RETRY_AFTER_SECONDS,
};

/**
 * The table's answers, each built on its first use and shared from then on. Not all at load: a
 * process that answers only 200s (a Lambda's first delivery) would build some twenty it never sends.
 */
const BY_CODE: Partial<Record<Code, WebhookResponse>> = {};

/**
 * The answer for an error code of the status table. `message` replaces the table's text only where it
 * is safe to echo (envelope problems, found after the signature proved who sent the body).
 */
export function responseFor(code: Code, message?: string, retryAfterSeconds?: number): WebhookResponse {
  if (retryAfterSeconds !== undefined)
    return errorResponse(code, message ?? STATUS_TABLE[code].message, String(retryAfterSeconds));
  if (message !== undefined) return errorResponse(code, message, RETRY_AFTER[code]);
  BY_CODE[code] ??= errorResponse(code, STATUS_TABLE[code].message, RETRY_AFTER[code]);
  return BY_CODE[code];
}

export function isStatusCode(code: string): code is Code {
  return Object.hasOwn(STATUS_TABLE, code);
}

/** The answer for an ending: shared, frozen answers for successes; the status table's for errors. */
// biome-ignore format: the parentheses make V8 compile it with the module, not on the first delivery
export const responseTo = (function responseTo(ending: Ending): WebhookResponse {
  const { code, error } = ending;
  if (code === 'handled' || code === 'queued') return HANDLED_RESPONSE;
  if (code === 'duplicate') return DUPLICATE_RESPONSE;
  if (code === 'stale') return STALE_RESPONSE;
  // Only envelope problems are echoed: they were found after the signature proved who sent the body.
  const message = error instanceof InvalidRequestError ? error.message : undefined;
  const retryAfter =
    error instanceof EventInProgressError || error instanceof ResourceBusyError
      ? error.retryAfterSeconds
      : code === 'rate_limited'
        ? downstreamWaitSeconds(error)
        : undefined;
  return responseFor(tableCode(code), message, retryAfter);
});

/**
 * The ending the sender is answered with. A handler's failure whose cause is a downstream's 429 (the
 * handler threw `RateLimitedError`) is answered `rate_limited`, not `handler_failed`: nothing on the
 * receiver's side failed, and the sender is told when the downstream will take calls again. The error
 * stays the run's `HandlerFailedError`, as `onError` heard it; the claim was released alike.
 */
export function answerable(ending: Ending): Ending {
  const { code, error } = ending;
  return code === 'handler_failed' && error !== undefined && rateLimitedIn(error) !== undefined
    ? { code: 'rate_limited', error }
    : ending;
}

/** `Retry-After` in whole seconds, rounded up: a sender that comes back early finds the downstream still limited. */
function downstreamWaitSeconds(error: unknown): number | undefined {
  const limited = rateLimitedIn(error);
  return limited === undefined ? undefined : Math.ceil(limited.retryAfterMs / 1000);
}

/** A code that is not an answer of the table (never expected here) is answered as an internal error. */
export function tableCode(code: string) {
  return isStatusCode(code) ? code : 'internal_error';
}
