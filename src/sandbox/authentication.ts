import { type ApiError, expiredToken, insufficientScope, invalidApiKey } from './api-errors.js';
import { isTestKey, keyAccount } from './api-keys.js';
import { verifyJwt } from './jwt.js';
import { formatScope, parseScope, requiredScope, type Scope } from './scopes.js';

/** Who is calling: whose data the request sees, and what it may do. */
export interface Principal {
  /** The account: `key:<sk_test_…>` for an API key, `sub:<user>` for an access token or JWT. */
  account: string;
  /** The token's scopes; `undefined` for API keys, which may do everything. */
  scopes: readonly Scope[] | undefined;
}

/** The outcome of reading the `Authorization` header. */
export type AuthResult = { ok: true; principal: Principal } | { ok: false; error: ApiError };

/** What credentials are checked against. */
export interface AuthOptions {
  /** Accept only this `sk_test_` key; any well-formed one when omitted. Tokens are accepted either way. */
  apiKey?: string | undefined;
  /** The account `apiKey`'s data lives in. @default keyAccount(apiKey) */
  apiKeyAccount?: string | undefined;
  /** The HS256 key access tokens and JWTs are verified with. */
  signingKey: string;
  /** The time, Unix seconds (fractional), tokens are judged at. */
  nowSeconds: number;
  /**
   * Whether the grant an access token belongs to (its `grant_id` claim) was revoked, after a replayed
   * code or refresh token. JWTs minted by hand carry no `grant_id` and are never revoked.
   * @default nothing is revoked
   */
  isGrantRevoked?: ((grantId: string) => boolean) | undefined;
}

const BEARER = /^Bearer ([^\s]+)$/;

function refuse(message: string, token = false): AuthResult {
  // The RFC 6750 challenge, without the message: header values must stay plain ASCII.
  const headers: Record<string, string> = token ? { 'www-authenticate': 'Bearer error="invalid_token"' } : {};
  return { ok: false, error: invalidApiKey(message, headers) };
}

/**
 * Read `Authorization: Bearer …` as the sandbox environment does. `sk_test_…` is an API key (any
 * well-formed one, unless the sandbox was started with one fixed `apiKey`); `sk_live_…` is refused
 * because a key used against the wrong environment is invalid. Anything shaped like a JWT is an access
 * token: verified as HS256 with the signing key, `401 expired_token` once past `exp`, and otherwise
 * (forged, malformed, or revoked with its grant) `401 invalid_api_key`, the spec's code for a missing
 * or invalid credential.
 */
export function authenticate(header: string | undefined, options: AuthOptions): AuthResult {
  if (header === undefined || header === '') {
    return refuse(
      'No API key provided. Send the header Authorization: Bearer sk_test_… (or an access token).',
    );
  }
  const credential = BEARER.exec(header)?.[1];
  if (credential === undefined) {
    return refuse('Malformed Authorization header. Expected: Bearer sk_test_… or Bearer <access token>.');
  }
  if (credential.startsWith('sk_live_')) {
    return refuse('Live keys (sk_live_…) are invalid in the sandbox. Use a test key (sk_test_…).');
  }
  if (credential.includes('.')) {
    const verified = verifyJwt(credential, options.signingKey, options.nowSeconds);
    if (!verified.ok) {
      if (verified.problem === 'expired') return { ok: false, error: expiredToken(verified.message) };
      return refuse(`Invalid access token: ${verified.message}`, true);
    }
    const grantId = verified.claims.grant_id;
    if (typeof grantId === 'string' && options.isGrantRevoked?.(grantId) === true) {
      return refuse(
        'Invalid access token: it was revoked, with every token of its grant, because a code or refresh token of that grant was used twice. Authorize again.',
        true,
      );
    }
    const scopes = parseScope(verified.claims.scope);
    if (scopes === undefined) return refuse('Invalid access token: unknown scope.', true);
    return { ok: true, principal: { account: `sub:${verified.claims.sub}`, scopes } };
  }
  if (!isTestKey(credential) || (options.apiKey !== undefined && credential !== options.apiKey)) {
    return refuse('Invalid API key. Use a test key (sk_test_…) or an access token.');
  }
  const account = options.apiKey !== undefined ? options.apiKeyAccount : undefined;
  return { ok: true, principal: { account: account ?? keyAccount(credential), scopes: undefined } };
}

/** Throw `403 insufficient_scope` when a token lacks the scope `method` needs. */
export function checkScope(principal: Principal, method: string): void {
  if (principal.scopes === undefined) return;
  const needed = requiredScope(method);
  if (!principal.scopes.includes(needed)) throw insufficientScope(needed, formatScope(principal.scopes));
}
