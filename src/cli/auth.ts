/** The outcome of reading the `Authorization` header. */
export type AuthResult = { ok: true; key: string } | { ok: false; message: string };

const BEARER = /^Bearer ([^\s]+)$/;
const TEST_KEY = /^sk_test_[A-Za-z0-9_]+$/;

/**
 * Accept `Authorization: Bearer sk_test_…`, as the sandbox environment does. Any well-formed test key
 * is accepted unless the sandbox was started with one fixed `apiKey`. Live keys are refused because a
 * key used against the wrong environment is invalid.
 */
export function authenticate(header: string | undefined, apiKey?: string): AuthResult {
  if (header === undefined || header === '') {
    return { ok: false, message: 'No API key provided. Send the header Authorization: Bearer sk_test_….' };
  }
  const key = BEARER.exec(header)?.[1];
  if (key === undefined) {
    return { ok: false, message: 'Malformed Authorization header. Expected: Bearer sk_test_….' };
  }
  if (key.startsWith('sk_live_')) {
    return {
      ok: false,
      message: 'Live keys (sk_live_…) are invalid in the sandbox. Use a test key (sk_test_…).',
    };
  }
  if (!TEST_KEY.test(key) || (apiKey !== undefined && key !== apiKey)) {
    return { ok: false, message: 'Invalid API key. Use a test key (sk_test_…).' };
  }
  return { ok: true, key };
}
