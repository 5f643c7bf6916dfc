import { createHash, timingSafeEqual } from 'node:crypto';

/** An application registered to use the OAuth 2.0 authorization-code flow against the sandbox. */
export interface OAuthClient {
  client_id: string;
  client_secret: string;
  /** The addresses `/oauth/authorize` may redirect to, compared as exact strings (RFC 6749 §3.1.2). */
  redirect_uris: string[];
}

const CLIENT_ID = /^[A-Za-z0-9_.-]{1,100}$/;

/** Why `uri` cannot be a redirect URI, or `undefined` when it can. */
function redirectUriProblem(uri: string): string | undefined {
  if (!URL.canParse(uri)) return `${uri} is not an absolute URL`;
  const url = new URL(uri);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `${uri} is not an http(s) address`;
  // RFC 6749 §3.1.2: the endpoint URI MUST NOT include a fragment component.
  if (url.hash !== '' || uri.includes('#')) return `${uri} has a fragment`;
  return undefined;
}

/**
 * Check a client from the data file or a flag. Throws an `Error` whose message names `where` and what
 * is wrong, in one line.
 */
export function checkClient(value: unknown, where: string): OAuthClient {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(`${where} must be an object with client_id, client_secret and redirect_uris.`);
  }
  const { client_id, client_secret, redirect_uris } = value as Record<string, unknown>;
  if (typeof client_id !== 'string' || !CLIENT_ID.test(client_id)) {
    throw new Error(`${where}: client_id must be 1 to 100 letters, digits, _, . or -.`);
  }
  if (typeof client_secret !== 'string' || client_secret === '') {
    throw new Error(`${where}: client_secret must be a non-empty string.`);
  }
  if (
    !Array.isArray(redirect_uris) ||
    redirect_uris.length === 0 ||
    !redirect_uris.every((uri) => typeof uri === 'string')
  ) {
    throw new Error(`${where}: redirect_uris must be a non-empty array of strings.`);
  }
  for (const uri of redirect_uris as string[]) {
    const problem = redirectUriProblem(uri);
    if (problem !== undefined) throw new Error(`${where}: redirect URI ${problem}.`);
  }
  return { client_id, client_secret, redirect_uris: [...(redirect_uris as string[])] };
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Whether `secret` is the client's secret, compared in constant time (over digests, so lengths may differ). */
export function secretMatches(client: OAuthClient, secret: string): boolean {
  return timingSafeEqual(digest(client.client_secret), digest(secret));
}
