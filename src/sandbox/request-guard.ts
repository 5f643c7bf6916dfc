import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

/** A request the guard refuses, with the status and the `{ error }` it is answered with. */
export interface GuardRefusal {
  readonly status: 403;
  readonly code: 'host_not_allowed' | 'origin_not_allowed' | 'cross_site_request';
  readonly message: string;
}

/** The names a loopback server answers to (with its port): the guard's allow-list. */
export interface AllowedHosts {
  readonly port: number;
  /** Host names and addresses, IPv6 ones in brackets (`[::1]`). */
  readonly names: readonly string[];
}

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];
const WILDCARDS = new Set(['0.0.0.0', '::', '']);

/**
 * The names a server bound to `host` on `port` answers to: loopback's, and `host` itself when it is
 * a name or an address of its own (not a wildcard such as 0.0.0.0, which names no one).
 *
 * @example
 * ```ts
 * allowedHosts('127.0.0.1', 4010).names; // ['127.0.0.1', 'localhost', '[::1]']
 * allowedHosts('192.168.1.5', 4010).names; // [..., '192.168.1.5']
 * ```
 */
export function allowedHosts(host: string, port: number): AllowedHosts {
  const own = isIP(host) === 6 ? `[${host}]` : host.toLowerCase();
  const names = WILDCARDS.has(host) || LOOPBACK_NAMES.includes(own) ? [] : [own];
  return { port, names: [...LOOPBACK_NAMES, ...names] };
}

/**
 * Decides whether a request may reach a local server (the sandbox, and the dashboard of
 * `service-webhooks dev` on it) at all, whatever its route. Both act on plain credentials a web page
 * can send (any `sk_test_` key, or the dev server's printed one), so what is checked is where the
 * request comes from:
 *
 * - `Host` must name this server (an allowed name with its port). A page on another site that rebinds
 *   its DNS name to 127.0.0.1 reaches this port as same-origin, but its requests still carry its own
 *   name in `Host`: refusing them is what stops DNS rebinding.
 * - `Origin`, when a browser sends one, must be this server's own (`null` included: a sandboxed frame
 *   or a redirect from elsewhere). A form or `fetch` from another origin never triggers an action,
 *   even a "simple" request that needs no preflight.
 * - `Sec-Fetch-Site: cross-site` is refused, except a top-level GET navigation (a link followed, or an
 *   app sending its user to `/oauth/authorize`), which shows a page and changes nothing.
 *
 * @example
 * ```ts
 * const refusal = guardRefusal(request, allowedHosts('127.0.0.1', 4010));
 * if (refusal !== undefined) sendJson(response, refusal.status, { error: { code: refusal.code, message: refusal.message } });
 * ```
 * @returns the refusal, or `undefined` when the request may go on.
 */
export function guardRefusal(request: IncomingMessage, allowed: AllowedHosts): GuardRefusal | undefined {
  const hosts = new Set(allowed.names.map((name) => `${name}:${allowed.port}`.toLowerCase()));
  // A client may leave out the port it connected to when it is HTTP's default.
  if (allowed.port === 80) for (const name of allowed.names) hosts.add(name.toLowerCase());
  const host = request.headers.host?.toLowerCase();
  if (host === undefined || !hosts.has(host)) {
    return {
      status: 403,
      code: 'host_not_allowed',
      message: `This server answers only requests to ${allowed.names.map((name) => `${name}:${allowed.port}`).join(', ')}; this one was for ${host ?? 'no Host'}.`,
    };
  }
  const origin = request.headers.origin;
  if (origin !== undefined && !hosts.has(originHost(origin))) {
    return {
      status: 403,
      code: 'origin_not_allowed',
      message: `Requests from ${origin} are refused: only this server's own pages may call it from a browser.`,
    };
  }
  const navigation =
    request.headers['sec-fetch-mode'] === 'navigate' &&
    (request.method === 'GET' || request.method === 'HEAD');
  if (request.headers['sec-fetch-site'] === 'cross-site' && !navigation) {
    return { status: 403, code: 'cross_site_request', message: 'Cross-site requests are refused.' };
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
