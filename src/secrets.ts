import { ConfigurationError } from './errors.js';

/**
 * The secret option as a frozen list, refusing what cannot be a webhook secret: nothing, an empty
 * string, or only white space (an environment variable set to a blank line). An HMAC keyed with any
 * of those is one an attacker can compute, so every entry point refuses them alike: `createWebhooks`,
 * and the node:crypto and Web Crypto verify and sign functions.
 */
export function secretList(secret: unknown): readonly string[] {
  const secrets = typeof secret === 'string' ? [secret] : secret;
  if (!Array.isArray(secrets) || secrets.length === 0) {
    throw new ConfigurationError(
      '`secret` is missing: pass the webhook secret from your dashboard (a string), or a list of secrets while rotating.',
    );
  }
  secrets.forEach((value: unknown, index) => {
    if (typeof value !== 'string' || value.trim().length === 0) {
      const where = secrets.length > 1 ? ` (entry ${index})` : '';
      const what = typeof value === 'string' && value.length > 0 ? 'only white space' : 'empty';
      throw new ConfigurationError(
        `\`secret\`${where} is ${what}: is the environment variable that holds the webhook secret set?`,
      );
    }
  });
  return Object.freeze([...secrets]);
}
