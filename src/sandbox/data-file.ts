import { isPlainObject } from '../parsing/plain-object.js';
import type { AccountData } from './account.js';
import { checkClient, type OAuthClient } from './oauth/clients.js';
import { DELIVERY_STATUSES } from './resources.js';

/** A refresh token as kept: only its SHA-256, so the data file does not hold usable tokens. */
export interface RefreshGrant {
  token_hash: string;
  /**
   * The grant the token belongs to: one per code exchange, shared by every token rotated from it and
   * carried by their access tokens, so a replay can revoke them all at once.
   */
  grant_id: string;
  client_id: string;
  /** The user the grant acts for: the `sub` of the access tokens it mints. */
  sub: string;
  /** Space-separated scopes, as granted at consent. */
  scope: string;
  /** Unix seconds. */
  expires_at: number;
}

/**
 * A refresh token already exchanged for a new pair, kept (by digest) until it would have expired: who
 * presents it again holds a copy, and the sandbox must recognise it to revoke its grant.
 */
export interface UsedRefreshToken {
  token_hash: string;
  grant_id: string;
  /** Unix seconds. */
  expires_at: number;
}

/** A grant revoked after a replay: access tokens carrying its `grant_id` are refused until `expires_at`. */
export interface RevokedGrant {
  grant_id: string;
  /** Unix seconds, past which none of the grant's access tokens can still be valid. */
  expires_at: number;
}

/**
 * The data file, version 2: one entry per account (`key:<sk_test_…>` or `sub:<user>`), the registered
 * OAuth clients, live and used refresh tokens, revoked grants and the JWT signing key, so tokens and
 * their revocation survive a restart. Version 1 (one shared set of resources at the top level) is still
 * read; see {@link parseDataFile}.
 */
export interface DataFile {
  version: 2;
  accounts: Record<string, AccountData>;
  oauth_clients: OAuthClient[];
  refresh_tokens: RefreshGrant[];
  used_refresh_tokens: UsedRefreshToken[];
  revoked_grants: RevokedGrant[];
  jwt_signing_key: string | null;
}

/**
 * A data file the sandbox cannot use; the message is one line that says what to do.
 *
 * @example
 * ```ts
 * try {
 *   await startSandbox({ dataFile: 'sandbox.json' });
 * } catch (error) {
 *   if (error instanceof DataFileError) console.error(error.message);
 *   else throw error;
 * }
 * ```
 */
export class DataFileError extends Error {
  override name = 'DataFileError';
}

type Fields = Record<string, unknown>;
type Check = (item: Fields) => string | undefined;

const isString = (value: unknown): value is string => typeof value === 'string';

// What each record needs for the sandbox to work with it; a wrong file fails here, not in a route later.
const RECORD_CHECKS: Readonly<Record<keyof AccountData, Check>> = {
  users: (item) =>
    isString(item.name) && isString(item.email) ? undefined : 'name and email must be strings',
  projects: (item) => (isString(item.name) ? undefined : 'name must be a string'),
  payments: (item) =>
    typeof item.amount === 'number' && isString(item.status) ? undefined : 'needs amount and status',
  webhooks: (item) =>
    isString(item.url) && URL.canParse(item.url) && Array.isArray(item.events) && isString(item.secret)
      ? undefined
      : 'needs url (an absolute URL), events (an array) and secret',
  deliveries: (item) =>
    isString(item.webhook_id) &&
    (DELIVERY_STATUSES as readonly unknown[]).includes(item.status) &&
    Array.isArray(item.attempts) &&
    typeof item.event === 'object' &&
    item.event !== null
      ? undefined
      : 'needs webhook_id, status (pending, succeeded or failed), attempts and event',
};

function checkAccount(value: unknown, where: string): AccountData {
  if (!isPlainObject(value)) throw new Error(`${where} must be an object`);
  const data: Partial<AccountData> = {};
  for (const [name, check] of Object.entries(RECORD_CHECKS) as [keyof AccountData, Check][]) {
    const list = value[name] ?? [];
    if (!Array.isArray(list)) throw new Error(`${where}.${name} must be an array`);
    list.forEach((item: unknown, index) => {
      const problem = !isPlainObject(item) || !isString(item.id) ? 'needs a string id' : check(item);
      if (problem !== undefined) throw new Error(`${where}.${name}[${index}] ${problem}`);
    });
    (data as Record<string, unknown>)[name] = list;
  }
  return data as AccountData;
}

function checkGrant(value: unknown, where: string): RefreshGrant {
  if (
    !isPlainObject(value) ||
    !isString(value.token_hash) ||
    !isString(value.client_id) ||
    !isString(value.sub) ||
    !isString(value.scope) ||
    typeof value.expires_at !== 'number' ||
    (value.grant_id !== undefined && !isString(value.grant_id))
  ) {
    throw new Error(
      `${where} needs token_hash, client_id, sub, scope and expires_at (grant_id, if any, a string)`,
    );
  }
  // Files saved before grants existed: each such token is a grant of its own (its access tokens carry
  // no grant_id, so a replay can retire the refresh tokens but not them).
  const grant_id = isString(value.grant_id) ? value.grant_id : `grt_${value.token_hash.slice(0, 24)}`;
  return { ...(value as unknown as RefreshGrant), grant_id };
}

function checkUsedToken(value: unknown, where: string): UsedRefreshToken {
  if (
    !isPlainObject(value) ||
    !isString(value.token_hash) ||
    !isString(value.grant_id) ||
    typeof value.expires_at !== 'number'
  ) {
    throw new Error(`${where} needs token_hash, grant_id and expires_at`);
  }
  return { token_hash: value.token_hash, grant_id: value.grant_id, expires_at: value.expires_at };
}

function checkRevokedGrant(value: unknown, where: string): RevokedGrant {
  if (!isPlainObject(value) || !isString(value.grant_id) || typeof value.expires_at !== 'number') {
    throw new Error(`${where} needs grant_id and expires_at`);
  }
  return { grant_id: value.grant_id, expires_at: value.expires_at };
}

function arrayOf<T>(value: unknown, where: string, check: (item: unknown, where: string) => T): T[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new Error(`${where} must be an array`);
  return value.map((item, index) => check(item, `${where}[${index}]`));
}

function fromVersion2(state: Fields): DataFile {
  if (state.accounts !== undefined && !isPlainObject(state.accounts))
    throw new Error('accounts must be an object');
  const accounts: Record<string, AccountData> = {};
  for (const [id, account] of Object.entries(state.accounts ?? {})) {
    accounts[id] = checkAccount(account, `accounts[${JSON.stringify(id)}]`);
  }
  const key = state.jwt_signing_key ?? null;
  if (key !== null && !isString(key)) throw new Error('jwt_signing_key must be a string');
  return {
    version: 2,
    accounts,
    oauth_clients: arrayOf(state.oauth_clients, 'oauth_clients', checkClient),
    refresh_tokens: arrayOf(state.refresh_tokens, 'refresh_tokens', checkGrant),
    used_refresh_tokens: arrayOf(state.used_refresh_tokens, 'used_refresh_tokens', checkUsedToken),
    revoked_grants: arrayOf(state.revoked_grants, 'revoked_grants', checkRevokedGrant),
    jwt_signing_key: key,
  };
}

/**
 * Read a data file's text. Version 1 files, from before accounts were separate, hold one shared set of
 * resources: it becomes the account `legacyAccount` (`migrated` is then true, so the sandbox can say
 * so) and is saved as version 2 on the next change. Throws {@link DataFileError} on anything else.
 */
export function parseDataFile(
  text: string,
  file: string,
  legacyAccount: string,
): { state: DataFile; migrated: boolean } {
  const fail = (problem: string): never => {
    throw new DataFileError(`${file} ${problem}; move it away or pass another --data file.`);
  };
  let state: unknown;
  try {
    state = JSON.parse(text);
  } catch {
    return fail('is not valid JSON');
  }
  if (!isPlainObject(state) || (state.version !== 1 && state.version !== 2)) {
    return fail('is not a sandbox data file (no "version": 1 or 2)');
  }
  try {
    if (state.version === 2) return { state: fromVersion2(state), migrated: false };
    return {
      state: {
        version: 2,
        accounts: { [legacyAccount]: checkAccount(state, 'the file') },
        oauth_clients: [],
        refresh_tokens: [],
        used_refresh_tokens: [],
        revoked_grants: [],
        jwt_signing_key: null,
      },
      migrated: true,
    };
  } catch (error) {
    return fail(`is not a valid sandbox data file: ${(error as Error).message.replace(/\.$/, '')}`);
  }
}
