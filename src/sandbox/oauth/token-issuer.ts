import { createHash, randomBytes } from 'node:crypto';
import { authError } from '../api-errors.js';
import { newId } from '../ids.js';
import { signJwt } from '../jwt.js';
import type { SandboxState } from '../sandbox-state.js';
import { formatScope, parseScope } from '../scopes.js';

/** The token endpoint's answer, with RFC 6749 §5.1's field names. */
export interface TokenResponse {
  /** An HS256 JWT (`sub`, `iat`, `exp`, `scope`, `client_id`, `jti`), sent as `Authorization: Bearer …`. */
  access_token: string;
  token_type: 'Bearer';
  /** Seconds until the access token expires. */
  expires_in: number;
  /** Opaque; exchanged once at the token endpoint for a new pair (rotation). */
  refresh_token: string;
  scope: string;
}

/** How tokens are minted. */
export interface TokenIssuerOptions {
  /** Where refresh tokens are kept (and so saved with the data file). */
  state: SandboxState;
  /** The HS256 key of the access tokens. */
  signingKey: string;
  /** Lifetime of an access token, whole seconds (the JWT `exp` is in seconds). */
  accessTokenTtlSeconds: number;
  /** Lifetime of a refresh token, seconds. */
  refreshTokenTtlSeconds: number;
}

/** The SHA-256 a refresh token is kept under. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

function invalidGrant(message: string) {
  return authError(400, 'invalid_grant', message);
}

/**
 * Mints access tokens (JWTs, so the API verifies them without a lookup) and refresh tokens (kept, by
 * hash, in the sandbox's state and so in the data file). A refresh token is single-use: refreshing answers a new
 * pair and retires the old token, as OAuth 2.0 Security BCP recommends.
 */
export class TokenIssuer {
  readonly #options: TokenIssuerOptions;

  constructor(options: TokenIssuerOptions) {
    this.#options = options;
  }

  /** A new access token and refresh token for `sub`, through `clientId`, with `scope`. */
  issue(clientId: string, sub: string, scope: string): { response: TokenResponse; refreshTokenHash: string } {
    const { state, signingKey, accessTokenTtlSeconds, refreshTokenTtlSeconds } = this.#options;
    const iat = Math.floor(Date.now() / 1000);
    const accessToken = signJwt(
      { sub, iat, exp: iat + accessTokenTtlSeconds, scope, client_id: clientId, jti: newId('tok') },
      signingKey,
    );
    const refreshToken = `rt_${randomBytes(32).toString('base64url')}`;
    const refreshTokenHash = hashToken(refreshToken);
    state.refreshTokens.set(refreshTokenHash, {
      token_hash: refreshTokenHash,
      client_id: clientId,
      sub,
      scope,
      expires_at: iat + refreshTokenTtlSeconds,
    });
    state.changed();
    return {
      response: {
        access_token: accessToken,
        token_type: 'Bearer',
        expires_in: accessTokenTtlSeconds,
        refresh_token: refreshToken,
        scope,
      },
      refreshTokenHash,
    };
  }

  /**
   * Exchange `refreshToken` for a new pair. `clientId`, when the caller authenticated as a client, must
   * be the client the token was issued to; `scope`, when given, may only narrow the grant (RFC 6749 §6).
   */
  refresh(refreshToken: string, clientId: string | undefined, scope: string | undefined): TokenResponse {
    const { state } = this.#options;
    const hash = hashToken(refreshToken);
    const grant = state.refreshTokens.get(hash);
    if (grant === undefined) {
      throw invalidGrant('The refresh token is unknown, revoked or already used (each one is good once).');
    }
    if (Date.now() / 1000 >= grant.expires_at) {
      this.revoke(hash);
      throw invalidGrant('The refresh token expired; send the user through /oauth/authorize again.');
    }
    if (clientId !== undefined && clientId !== grant.client_id) {
      throw invalidGrant('The refresh token was issued to another client.');
    }
    let granted = grant.scope;
    if (scope !== undefined) {
      const asked = parseScope(scope);
      const had = parseScope(grant.scope) ?? [];
      if (asked === undefined || asked.length === 0 || !asked.every((name) => had.includes(name))) {
        throw authError(400, 'invalid_scope', `scope may only narrow the grant (${grant.scope}).`);
      }
      granted = formatScope(asked);
    }
    this.revoke(hash);
    return this.issue(grant.client_id, grant.sub, granted).response;
  }

  /** Retire a refresh token, such as one issued for a code that was then replayed. */
  revoke(refreshTokenHash: string): void {
    const { state } = this.#options;
    if (state.refreshTokens.delete(refreshTokenHash)) state.changed();
  }
}
