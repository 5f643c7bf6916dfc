import { constants } from 'node:fs';
import { access, rename, rm, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { Account, type MAX_DELIVERIES } from './account.js';
import {
  type DataFile,
  DataFileError,
  parseDataFile,
  type RefreshGrant,
  type UsedRefreshToken,
} from './data-file.js';
import type { OAuthClient } from './oauth/clients.js';
import { createPrivateFile, openPrivateFile, temporarySibling } from './private-files.js';

// Fail at start, not with a warning at the first save while nothing is kept.
async function checkFolder(file: string): Promise<void> {
  const folder = dirname(resolve(file));
  const where = `Cannot keep data in ${file}:`;
  try {
    if (!(await stat(folder)).isDirectory()) throw new DataFileError(`${where} ${folder} is not a folder.`);
    await access(folder, constants.W_OK);
  } catch (error) {
    if (error instanceof DataFileError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    throw new DataFileError(
      code === 'ENOENT'
        ? `${where} the folder ${folder} does not exist; create it or pass another --data file.`
        : `${where} the folder ${folder} is not writable (${code}).`,
    );
  }
}

async function readState(
  file: string,
  legacyAccount: string,
): Promise<{ state: Partial<DataFile>; migrated: boolean }> {
  let text: string;
  try {
    const handle = await openPrivateFile(file);
    if (handle === undefined) {
      await checkFolder(file);
      return { state: {}, migrated: false };
    }
    try {
      text = await handle.readFile('utf8');
    } finally {
      await handle.close();
    }
  } catch (error) {
    if (error instanceof DataFileError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    throw new DataFileError(
      code === 'EISDIR'
        ? `${file} is a folder; pass a file name to --data, such as ${file}/sandbox.json.`
        : `Cannot read ${file} (${code ?? String(error)}).`,
    );
  }
  await checkFolder(file);
  return parseDataFile(text, file, legacyAccount);
}

/**
 * Everything the sandbox holds, in memory, optionally mirrored to a JSON data file: one
 * {@link Account} per caller, and what the OAuth server keeps (clients from the file, refresh tokens,
 * the JWT signing key). Not the receiver's idempotency store: this is the emulated service's side.
 */
export class SandboxState {
  readonly #accounts = new Map<string, Account>();
  readonly #file: string | undefined;
  /** Clients registered in the data file (the `--oauth-client` ones are not saved). */
  readonly oauthClients: readonly OAuthClient[];
  /** Live refresh tokens by the SHA-256 of the token. */
  readonly refreshTokens: Map<string, RefreshGrant>;
  /** Refresh tokens already exchanged, by the SHA-256 of the token, so a replay is recognised. */
  readonly usedRefreshTokens: Map<string, UsedRefreshToken>;
  /** Revoked grants: `grant_id` → Unix seconds until which their access tokens must be refused. */
  readonly revokedGrants: Map<string, number>;
  /** The key JWTs are signed with, when one was saved or set. */
  jwtSigningKey: string | null;
  /** The file was version 1 and its data now belongs to one account. */
  readonly migrated: boolean;
  #writing: Promise<void> = Promise.resolve();
  #dirty = false;
  readonly #maxDeliveries: number | undefined;

  // Private so that a state bound to a file always starts from that file's content (see `open`):
  // one built empty would overwrite the file at its first change. ECMAScript has no `#constructor`.
  private constructor(
    file: string | undefined,
    state: Partial<DataFile>,
    migrated: boolean,
    maxDeliveries: number | undefined,
  ) {
    this.#file = file;
    this.#maxDeliveries = maxDeliveries;
    this.migrated = migrated;
    for (const [id, data] of Object.entries(state.accounts ?? {})) {
      this.#accounts.set(id, new Account(id, data, () => this.changed(), maxDeliveries));
    }
    this.oauthClients = state.oauth_clients ?? [];
    this.refreshTokens = new Map((state.refresh_tokens ?? []).map((grant) => [grant.token_hash, grant]));
    this.usedRefreshTokens = new Map(
      (state.used_refresh_tokens ?? []).map((used) => [used.token_hash, used]),
    );
    this.revokedGrants = new Map(
      (state.revoked_grants ?? []).map((grant) => [grant.grant_id, grant.expires_at]),
    );
    this.jwtSigningKey = state.jwt_signing_key ?? null;
  }

  /**
   * An empty state, or the one saved in `file` (created on the first change when it does not exist, in
   * a folder that must exist). A version 1 file's data becomes the account `legacyAccount`. Throws
   * {@link DataFileError} with a one-line message when the file cannot be used. Each account keeps
   * its last `maxDeliveries` deliveries (default {@link MAX_DELIVERIES}).
   */
  static async open(
    file: string | undefined,
    legacyAccount: string,
    maxDeliveries?: number,
  ): Promise<SandboxState> {
    if (file === undefined) return new SandboxState(undefined, {}, false, maxDeliveries);
    const { state, migrated } = await readState(file, legacyAccount);
    return new SandboxState(file, state, migrated, maxDeliveries);
  }

  /** The account `id`, created empty on first use. */
  account(id: string): Account {
    let account = this.#accounts.get(id);
    if (account === undefined) {
      account = new Account(id, {}, () => this.changed(), this.#maxDeliveries);
      this.#accounts.set(id, account);
    }
    return account;
  }

  /** Whether the grant `grantId` (an access token's `grant_id` claim) was revoked and still must be refused. */
  isGrantRevoked(grantId: string, nowSeconds: number): boolean {
    const until = this.revokedGrants.get(grantId);
    return until !== undefined && nowSeconds < until;
  }

  /** Every account known, for resuming deliveries. */
  allAccounts(): IterableIterator<Account> {
    return this.#accounts.values();
  }

  /**
   * Note that data changed. Writes are coalesced and serialised: at most one runs at a time and one
   * more follows it with whatever changed meanwhile, so a burst of requests costs two writes.
   */
  changed(): void {
    if (this.#file === undefined) return;
    if (this.#dirty) return;
    this.#dirty = true;
    this.#writing = this.#writing.then(() => this.#write());
  }

  /** Wait until every change so far is on disk. */
  async flush(): Promise<void> {
    await this.#writing;
  }

  #snapshot(): DataFile {
    const now = Date.now() / 1000;
    const accounts: DataFile['accounts'] = {};
    for (const account of this.#accounts.values()) {
      if (!account.isEmpty()) accounts[account.id] = account.toData();
    }
    return {
      version: 2,
      accounts,
      oauth_clients: [...this.oauthClients],
      refresh_tokens: [...this.refreshTokens.values()].filter((grant) => grant.expires_at > now),
      used_refresh_tokens: [...this.usedRefreshTokens.values()].filter((used) => used.expires_at > now),
      revoked_grants: [...this.revokedGrants]
        .filter(([, until]) => until > now)
        .map(([grant_id, expires_at]) => ({ grant_id, expires_at })),
      jwt_signing_key: this.jwtSigningKey,
    };
  }

  async #write(): Promise<void> {
    const file = this.#file;
    if (file === undefined) return;
    this.#dirty = false;
    const state = this.#snapshot();
    // Write a sibling file, flush it to disk, then rename over the old one: a crash leaves either the
    // old file or the new one, never half of one. The sibling is made owner-only and exclusively,
    // under a name no one can plant ahead; the rename replaces a link planted at `file`, never
    // writing through it.
    const temp = temporarySibling(file);
    let created = false;
    try {
      const handle = await createPrivateFile(temp);
      created = true;
      try {
        await handle.writeFile(JSON.stringify(state, null, 2));
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temp, file);
    } catch (error) {
      if (created) await rm(temp, { force: true });
      process.stderr.write(`service-webhooks sandbox: could not save ${file}: ${String(error)}\n`);
    }
  }
}
