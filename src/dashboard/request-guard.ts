import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { DEV_TOKEN_HEADER } from '../dev/report.js';

/** A request the dashboard refuses, with the status and the `{ error }` it is answered with. */
export interface Refusal {
  readonly status: 401 | 403;
  readonly code: 'host_not_allowed' | 'origin_not_allowed' | 'cross_site_request' | 'invalid_token';
  readonly message: string;
}

/** What the guard checks requests against. */
export interface GuardSettings {
  /** The port the sandbox listens on: every allowed `Host` and `Origin` carries it. */
  readonly port: number;
  /** The per-start token every API request carries. */
  readonly token: string;
  /** Host names allowed besides loopback's (the `--host` the dashboard was bound to). */
  readonly extraHosts?: readonly string[];
}

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];

/**
 * Decides whether a request may reach the dashboard. The dashboard can send events and replay dead
 * letters, and its page holds the token, so three things are checked:
 *
 * - `Host` must name this server (loopback, or the host it was bound to, with its port). A page on
 *   another site that rebinds its DNS name to 127.0.0.1 reaches this port as same-origin, but its
 *   requests still carry its own name in `Host`: refusing them is what stops DNS rebinding.
 * - `Origin`, when a browser sends one, must be this server's own; `Sec-Fetch-Site: cross-site` is
 *   refused too. A form or `fetch` from another origin never triggers an action, even a "simple"
 *   request that needs no preflight.
 * - API requests carry the per-start token (header, or `?token=` for the event stream, which cannot
 *   set headers). Only the page this server serves knows it; another origin cannot read that page.
 *
 * @returns the refusal, or `undefined` when the request may go on.
 */
export function refusalOf(
  request: IncomingMessage,
  url: URL,
  settings: GuardSettings,
  needsToken: boolean,
): Refusal | undefined {
  const names = [...LOOPBACK_NAMES, ...(settings.extraHosts ?? [])];
  const allowedHosts = new Set(names.map((name) => `${name}:${settings.port}`.toLowerCase()));
  const host = request.headers.host?.toLowerCase();
  if (host === undefined || !allowedHosts.has(host)) {
    return {
      status: 403,
      code: 'host_not_allowed',
      message: `The dashboard answers only requests to ${names.map((name) => `${name}:${settings.port}`).join(', ')}; this one was for ${host ?? 'no Host'}.`,
    };
  }
  const origin = request.headers.origin;
  if (origin !== undefined && !allowedHosts.has(originHost(origin))) {
    return {
      status: 403,
      code: 'origin_not_allowed',
      message: `Requests from ${origin} are refused: only the dashboard's own page may use its API.`,
    };
  }
  if (request.headers['sec-fetch-site'] === 'cross-site') {
    return { status: 403, code: 'cross_site_request', message: 'Cross-site requests are refused.' };
  }
  if (!needsToken) return undefined;
  const header = request.headers[DEV_TOKEN_HEADER];
  const given = typeof header === 'string' ? header : url.searchParams.get('token');
  if (given === null || !sameSecret(given, settings.token)) {
    return {
      status: 401,
      code: 'invalid_token',
      message: `A missing or wrong ${DEV_TOKEN_HEADER}: use the dashboard's page, or the report address it shows.`,
    };
  }
  return undefined;
}

// `null` (a sandboxed frame, a file: page) and anything unparseable are no allowed origin.
function originHost(origin: string): string {
  try {
    const parsed = new URL(origin);
    return parsed.protocol === 'http:' ? parsed.host.toLowerCase() : '';
  } catch {
    return '';
  }
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
