/**
 * Acting as the service's sender: one signed POST of a webhook body. Used by the sandbox's delivery
 * scheduler and, through the sandbox's barrel (index.ts), by the CLI's `send` and `replay`.
 *
 * @packageDocumentation
 */
import {
  DUPLICATE_HEADER,
  SENDER_SCHEDULE,
  SIGNATURE_HEADER,
  STALE_HEADER,
  signPayload,
} from 'service-webhooks/core';

/** How much of a receiver's answer is kept for printing and for the deliveries listing. */
const BODY_EXCERPT_CHARS = 500;

/** What one signed POST produced. */
export interface PostResult {
  /** The receiver's status, `null` when no answer came. */
  status: number | null;
  /** A 2xx came back. */
  ok: boolean;
  /** The receiver marked the answer as a duplicate (`x-webhook-duplicate: true`). */
  duplicate: boolean;
  /** The receiver marked the event as stale (`x-webhook-stale: true`, its `ordering` option). */
  stale: boolean;
  durationMs: number;
  /** The start of the answer's body. */
  body: string;
  /** Why no answer came (timeout, refused connection, bad address). */
  error: string | null;
  /** The answer's `Retry-After` header, when it had one. */
  retryAfter: string | null;
  /** The status table's code from an error answer's `{ error: { code } }`, when it has one. */
  code: string | null;
}

/** A result for an attempt that was never made, or whose request failed before any answer. */
export function unanswered(error: string, durationMs = 0): PostResult {
  return {
    status: null,
    ok: false,
    duplicate: false,
    stale: false,
    durationMs,
    body: '',
    error,
    retryAfter: null,
    code: null,
  };
}

/** How {@link postSigned} sends. */
export interface PostOptions {
  /** @default SENDER_SCHEDULE.attemptTimeoutMs, the sender's own timeout */
  timeoutMs?: number;
  /** Aborts the request, for shutting down. */
  signal?: AbortSignal;
  /** The `user-agent` header. */
  userAgent?: string;
}

/**
 * POST `body` to `url` signed as the service signs deliveries: `x-service-signature` is `sha256=` and
 * the HMAC of these exact bytes. Never throws; network failures are a result.
 *
 * @example
 * ```ts
 * const result = await postSigned('http://localhost:3000/webhooks', JSON.stringify(event), 'whsec_…');
 * if (!result.ok) console.error(result.status ?? result.error);
 * ```
 */
export async function postSigned(
  url: string,
  body: string,
  secret: string,
  options: PostOptions = {},
): Promise<PostResult> {
  const timeoutMs = options.timeoutMs ?? SENDER_SCHEDULE.attemptTimeoutMs;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const response = await fetch(url, {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/json',
        'user-agent': options.userAgent ?? 'service-webhooks-cli',
        [SIGNATURE_HEADER]: signPayload(body, secret),
      },
      // The service does not follow redirects to deliver; neither do we, so a misconfigured URL shows.
      redirect: 'manual',
      signal,
    });
    const text = await response.text();
    return {
      status: response.status,
      ok: response.status >= 200 && response.status < 300,
      duplicate: response.headers.get(DUPLICATE_HEADER) === 'true',
      stale: response.headers.get(STALE_HEADER) === 'true',
      durationMs: elapsed(),
      body: text.length > BODY_EXCERPT_CHARS ? `${text.slice(0, BODY_EXCERPT_CHARS)}…` : text,
      error: null,
      retryAfter: response.headers.get('retry-after'),
      code: errorCode(text),
    };
  } catch (error) {
    const reason = timeout.aborted ? `timed out after ${timeoutMs} ms` : describeNetworkError(error);
    return unanswered(reason, elapsed());
  }
}

// The receiver's error answers are `{ "error": { "code": … } }` (the status table); other receivers'
// bodies are whatever they are, so anything else is no code rather than a failure.
function errorCode(text: string): string | null {
  if (!text.startsWith('{')) return null;
  try {
    const code = (JSON.parse(text) as { error?: { code?: unknown } }).error?.code;
    return typeof code === 'string' ? code : null;
  } catch {
    return null;
  }
}

// fetch wraps the useful part (ECONNREFUSED, ENOTFOUND) in `cause`; show that rather than "fetch failed".
function describeNetworkError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause;
  if (cause instanceof Error) {
    const code = (cause as NodeJS.ErrnoException).code;
    return code ? `${code}: ${cause.message}` : cause.message;
  }
  return error.message;
}
