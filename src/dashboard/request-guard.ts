import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { DEV_TOKEN_HEADER } from '../dev/report.js';

/** A `/_dev/api/*` request the dashboard refuses, with the status and the `{ error }` it is answered with. */
export interface Refusal {
  readonly status: 401 | 403;
  readonly code: 'invalid_token' | 'insufficient_scope';
  readonly message: string;
}

/** The dashboard's two per-start tokens. */
export interface DashboardTokens {
  /** Held by the page this server serves: it may do everything the page does. */
  readonly page: string;
  /**
   * Held by the receiver (`SERVICE_WEBHOOKS_DEV_URL`), which runs other code and may log its
   * environment: it may post reports, and what `service-webhooks send` sent, and nothing else.
   */
  readonly report: string;
}

/**
 * The routes the report token opens: both only add to what the page shows (a receiver's report, an
 * attempt `service-webhooks send` made); neither sends, replays, reads the secret or clears anything.
 */
const REPORT_ROUTES: readonly { readonly method: string; readonly pathname: string }[] = [
  { method: 'POST', pathname: '/_dev/api/report' },
  { method: 'POST', pathname: '/_dev/api/sent' },
];

/**
 * Decides whether a `/_dev/api/*` request carries a token that allows it. The request already passed
 * the sandbox's guard (`Host` and `Origin` are this server's; see `guardRefusal`), which every route
 * shares; this is what only the dashboard's API asks for besides:
 *
 * - a per-start token (header, or `?token=` for the event stream, which cannot set headers): only the
 *   page this server serves knows the page token; another origin cannot read that page.
 * - the report token opens `POST /_dev/api/report` and `POST /_dev/api/sent` only. A valid token that does not allow the
 *   request is `403 insufficient_scope` (as the sandbox answers a token without the scope); a missing
 *   or unknown one is `401 invalid_token`.
 *
 * @example
 * ```ts
 * const refusal = tokenRefusal(request, url, { page: pageToken, report: reportToken });
 * if (refusal !== undefined) sendJson(response, refusal.status, { error: { code: refusal.code, message: refusal.message } });
 * ```
 * @returns the refusal, or `undefined` when the request may go on.
 */
export function tokenRefusal(
  request: IncomingMessage,
  url: URL,
  tokens: DashboardTokens,
): Refusal | undefined {
  const header = request.headers[DEV_TOKEN_HEADER];
  const given = typeof header === 'string' ? header : url.searchParams.get('token');
  if (given !== null && sameSecret(given, tokens.page)) return undefined;
  if (given !== null && sameSecret(given, tokens.report)) {
    if (REPORT_ROUTES.some((route) => request.method === route.method && url.pathname === route.pathname)) {
      return undefined;
    }
    return {
      status: 403,
      code: 'insufficient_scope',
      message: `The report token may only ${REPORT_ROUTES.map((route) => `${route.method} ${route.pathname}`).join(' and ')}; everything else is the dashboard page's.`,
    };
  }
  return {
    status: 401,
    code: 'invalid_token',
    message: `A missing or wrong ${DEV_TOKEN_HEADER}: use the dashboard's page, or the report address it shows.`,
  };
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
