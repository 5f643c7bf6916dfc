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

/** 401 `invalid_api_key`, shape A. */
export function invalidApiKey(message: string): ApiError {
  return new ApiError(401, { error: { type: 'authentication_error', code: 'invalid_api_key', message } });
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
