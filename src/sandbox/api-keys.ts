/**
 * The sandbox's API keys: which strings are test keys, and the account each key's data lives in.
 * Kept apart from request authentication because the CLI needs the key rules without the server.
 *
 * @packageDocumentation
 */

/** The key the CLI's `deliveries` command uses by default, and which owns a version 1 data file's data. */
export const DEFAULT_TEST_KEY = 'sk_test_cli';

const TEST_KEY = /^sk_test_[A-Za-z0-9_]+$/;

/**
 * Whether `key` is a well-formed sandbox API key.
 *
 * @example
 * ```ts
 * isTestKey('sk_test_ci_42'); // true
 * isTestKey('sk_live_42'); // false: live keys are invalid in the sandbox
 * ```
 */
export function isTestKey(key: string): boolean {
  return TEST_KEY.test(key);
}

/** The account an API key's data lives in. */
export function keyAccount(key: string): string {
  return `key:${key}`;
}
