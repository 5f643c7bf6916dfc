import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError, invalidRequest, requestError } from './api-errors.js';
import { authenticate, checkScope } from './authentication.js';
import { readJsonBody, sendJson } from './http-io.js';
import { newId } from './ids.js';
import type { RateLimiter, RateLimitStatus } from './rate-limiter.js';
import type { Router } from './router.js';
import type { SandboxState } from './sandbox-state.js';

/** What the API handler works with. */
export interface ApiHandlerOptions {
  router: Router;
  limiter: RateLimiter;
  state: SandboxState;
  /** Accept only this `sk_test_` key; any well-formed one when omitted. */
  apiKey: string | undefined;
  /** The account `apiKey`'s data lives in; the key's own when `undefined`. */
  apiKeyAccount?: string | undefined;
  /** The HS256 key access tokens and JWTs are verified with. */
  signingKey: string;
  log: (line: string) => void;
}

/** Answers one request outside `/oauth/`; resolves to the status written. */
export type ApiHandler = (request: IncomingMessage, response: ServerResponse, url: URL) => Promise<number>;

// Inspection endpoints are tooling, not the emulated API: they answer with the headers but are free.
function isFree(method: string, path: string): boolean {
  return method === 'GET' && path.startsWith('/sandbox/deliveries');
}

// A path segment the router could not decode would otherwise look like an unknown route (404).
function isDecodable(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

function rateLimitHeaders(status: RateLimitStatus): Record<string, string> {
  return {
    'x-ratelimit-limit': String(status.limit),
    'x-ratelimit-remaining': String(status.remaining),
    'x-ratelimit-reset': String(status.resetAt),
  };
}

/**
 * The sandbox API under `/v1`, in the order the service checks a request: rate limit (per account, or
 * per address for callers without valid credentials), credentials, route, scope, body. Every failure
 * is an `ApiError` answered in the service's error shapes; anything else is a 500 and a log line.
 */
export function createApiHandler(options: ApiHandlerOptions): ApiHandler {
  const { router, limiter, state, apiKey, apiKeyAccount, signingKey, log } = options;

  return async (request, response, url) => {
    const requestId = newId('req');
    const method = request.method ?? 'GET';
    const path = url.pathname.startsWith('/v1/') ? url.pathname.slice(3) : undefined;
    const nowSeconds = Date.now() / 1000;
    const auth = authenticate(request.headers.authorization, {
      apiKey,
      apiKeyAccount,
      signingKey,
      nowSeconds,
      isGrantRevoked: (grantId) => state.isGrantRevoked(grantId, nowSeconds),
    });
    // Counted per account (an API key, or a token's user); callers without valid credentials are
    // counted by address, so a flood of bad keys is limited too.
    const bucket = auth.ok ? auth.principal.account : `address:${request.socket.remoteAddress}`;
    const rate = limiter.take(bucket, path === undefined || !isFree(method, path));
    const headers = { ...rateLimitHeaders(rate), 'x-request-id': requestId };
    try {
      if (!rate.allowed) {
        throw new ApiError(
          429,
          {
            error: { code: 'rate_limit_exceeded', message: `Rate limit of ${rate.limit} requests exceeded.` },
          },
          { 'retry-after': String(rate.retryAfterSeconds) },
        );
      }
      if (!auth.ok) throw auth.error;
      if (path === undefined) throw requestError(404, 'not_found', 'Every API path starts with /v1/.');
      if (!isDecodable(path)) throw invalidRequest('path', 'holds a malformed percent-escape');
      const match = router.match(method, path);
      if (match.kind === 'not_found') throw requestError(404, 'not_found', `No route ${method} /v1${path}.`);
      if (match.kind === 'method_not_allowed') {
        const allow = match.allow.join(', ');
        throw new ApiError(
          405,
          { error: { code: 'method_not_allowed', message: `Use ${allow}.` } },
          { allow },
        );
      }
      checkScope(auth.principal, method);
      const body = method === 'POST' || method === 'PUT' ? await readJsonBody(request) : undefined;
      const result = await match.handler({
        account: state.account(auth.principal.account),
        params: match.params,
        query: url.searchParams,
        body,
        requestId,
      });
      sendJson(response, result.status, result.body, headers);
      return result.status;
    } catch (error) {
      if (error instanceof ApiError) {
        sendJson(response, error.status, error.body, { ...headers, ...error.headers });
        return error.status;
      }
      log(`internal error on ${method} ${url.pathname}: ${String(error)}`);
      sendJson(response, 500, { error: { code: 'internal_error', message: 'The sandbox failed.' } }, headers);
      return 500;
    }
  };
}
