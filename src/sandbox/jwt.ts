import { createHmac, timingSafeEqual } from 'node:crypto';
import { isPlainObject } from '../parsing/plain-object.js';

/**
 * The claims the service documents for its JWTs; access tokens the sandbox issues add `client_id`, `jti`
 * and `grant_id` (the grant a replay revokes).
 */
export interface JwtClaims {
  /** The user the token acts for. */
  sub: string;
  /** Issue time, Unix seconds. */
  iat: number;
  /** Expiry time, Unix seconds: the token is refused from this second on. */
  exp: number;
  /** Space-separated scopes, such as `read write`. */
  scope: string;
  [claim: string]: unknown;
}

/** Why a token was refused. `expired` is told apart so the API can answer `expired_token`. */
export type JwtProblem = 'malformed' | 'algorithm' | 'signature' | 'claims' | 'expired';

/** The outcome of {@link verifyJwt}. */
export type JwtVerification =
  | { ok: true; claims: JwtClaims }
  | { ok: false; problem: JwtProblem; message: string };

const HEADER = { alg: 'HS256', typ: 'JWT' } as const;
const SEGMENT = /^[A-Za-z0-9_-]+$/;
/** Clock skew tolerated on `iat`, for tokens minted on another machine. */
const SKEW_SECONDS = 60;

function encode(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

function signature(signingInput: string, key: string): string {
  return createHmac('sha256', key).update(signingInput).digest('base64url');
}

function decodeObject(segment: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
    return isPlainObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A compact JWS (RFC 7515) of `claims`, header `{"alg":"HS256","typ":"JWT"}`, signed with `key`.
 *
 * @example
 * ```ts
 * const iat = Math.floor(Date.now() / 1000);
 * const token = signJwt({ sub: 'ada', iat, exp: iat + 3600, scope: 'read write' }, sandbox.jwtSecret);
 * await fetch(`${sandbox.url}/users`, { headers: { authorization: `Bearer ${token}` } });
 * ```
 */
export function signJwt(claims: JwtClaims, key: string): string {
  const signingInput = `${encode(HEADER)}.${encode(claims)}`;
  return `${signingInput}.${signature(signingInput, key)}`;
}

/**
 * Verify an HS256 JWT against `key` and the time `nowSeconds`. Only `alg: HS256` is accepted (never
 * `none`, never an algorithm the token chooses), the signature is compared in constant time, and the
 * claims `sub`, `iat`, `exp` and `scope` must be present and typed as the service documents. Expiry is
 * judged only after the signature holds, so a forged token is never told it merely expired.
 *
 * @example
 * ```ts
 * const verified = verifyJwt(token, sandbox.jwtSecret, Date.now() / 1000);
 * if (verified.ok) console.log(verified.claims.sub);
 * else console.log(verified.problem); // 'expired', 'signature', …
 * ```
 */
export function verifyJwt(token: string, key: string, nowSeconds: number): JwtVerification {
  const parts = token.split('.');
  if (parts.length !== 3 || !parts.every((part) => SEGMENT.test(part))) {
    return { ok: false, problem: 'malformed', message: 'The token is not a compact JWT.' };
  }
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
  const header = decodeObject(headerPart);
  if (header === undefined)
    return { ok: false, problem: 'malformed', message: 'The JWT header is not JSON.' };
  if (header.alg !== 'HS256' || (header.typ !== undefined && header.typ !== 'JWT') || 'crit' in header) {
    return {
      ok: false,
      problem: 'algorithm',
      message: `JWTs must be signed with HS256 (typ JWT); got alg ${JSON.stringify(header.alg)}.`,
    };
  }
  // Comparing the encoded forms also refuses non-canonical base64url spellings of a valid signature.
  const expected = Buffer.from(signature(`${headerPart}.${payloadPart}`, key));
  const given = Buffer.from(signaturePart);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return { ok: false, problem: 'signature', message: 'The JWT signature does not verify.' };
  }
  const claims = decodeObject(payloadPart);
  if (
    claims === undefined ||
    typeof claims.sub !== 'string' ||
    claims.sub === '' ||
    claims.sub.length > 200 ||
    !Number.isSafeInteger(claims.iat) ||
    !Number.isSafeInteger(claims.exp) ||
    typeof claims.scope !== 'string'
  ) {
    return {
      ok: false,
      problem: 'claims',
      message: 'The JWT must carry sub (string), iat and exp (integer Unix seconds) and scope (string).',
    };
  }
  if ((claims.iat as number) > nowSeconds + SKEW_SECONDS) {
    return { ok: false, problem: 'claims', message: 'The JWT was issued in the future (iat).' };
  }
  if (nowSeconds >= (claims.exp as number)) {
    return {
      ok: false,
      problem: 'expired',
      message: 'The access token expired; refresh it or get a new one.',
    };
  }
  return { ok: true, claims: claims as JwtClaims };
}
