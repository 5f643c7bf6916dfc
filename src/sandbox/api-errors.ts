/**
 * The two error shapes of the service, built in one place so every route answers alike.
 * Shape A is for authentication failures, shape B for everything else.
 */

/** Shape A: authentication failures. */
export interface AuthErrorBody {
  error: { type: 'authentication_error'; code: string; message: string };
}

/** Shape B: request failures, with the offending field when one is to blame. */
export interface RequestErrorBody {
  error: { code: string; message: string; details?: { field: string; reason: string } };
}

/** A failure a route raises; the server writes `body` with `status` and `headers` as it is. */
export class ApiError extends Error {
  override name = 'ApiError';

  constructor(
    readonly status: number,
    readonly body: AuthErrorBody | RequestErrorBody,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(body.error.message);
  }
}

/**
 * A shape A error with any code: the API's credential failures, and the OAuth endpoints' errors, whose
 * codes are RFC 6749's lower-case ones (`invalid_request`, `invalid_client`, `invalid_grant`, …).
 */
export function authError(
  status: number,
  code: string,
  message: string,
  headers: Readonly<Record<string, string>> = {},
): ApiError {
  return new ApiError(status, { error: { type: 'authentication_error', code, message } }, headers);
}

/** 401 `invalid_api_key`, shape A: a missing or invalid key or token. */
export function invalidApiKey(message: string, headers: Readonly<Record<string, string>> = {}): ApiError {
  return authError(401, 'invalid_api_key', message, headers);
}

/** 401 `expired_token`, shape A, with the RFC 6750 challenge OAuth clients look for. */
export function expiredToken(message: string): ApiError {
  return authError(401, 'expired_token', message, {
    'www-authenticate': 'Bearer error="invalid_token", error_description="The access token expired"',
  });
}

/**
 * 403 `insufficient_scope`, shape A (the spec lists it with the authentication failures), with the
 * RFC 6750 challenge naming the scope needed.
 */
export function insufficientScope(needed: string, granted: string): ApiError {
  return authError(
    403,
    'insufficient_scope',
    `This request needs the ${needed} scope; the token has ${granted === '' ? 'none' : granted}.`,
    { 'www-authenticate': `Bearer error="insufficient_scope", scope="${needed}"` },
  );
}

/** 400 `INVALID_REQUEST`, shape B, naming the field and the reason. */
export function invalidRequest(field: string, reason: string): ApiError {
  return new ApiError(400, {
    error: { code: 'INVALID_REQUEST', message: `Invalid ${field}: ${reason}.`, details: { field, reason } },
  });
}

/** A shape B error without details, such as 404 `user_not_found`. */
export function requestError(status: number, code: string, message: string): ApiError {
  return new ApiError(status, { error: { code, message } });
}
