import { createHash, randomBytes } from 'node:crypto';
import { authError } from '../api-errors.js';
import { newId } from '../ids.js';
import { signJwt } from '../jwt.js';
import type { SandboxState } from '../sandbox-state.js';
import { formatScope, parseScope } from '../scopes.js';

/** The token endpoint's answer, with RFC 6749 §5.1's field names. */
export interface TokenResponse {
  /**
   * An HS256 JWT (`sub`, `iat`, `exp`, `scope`, `client_id`, `jti`, and `grant_id`, by which a replay
   * revokes it), sent as `Authorization: Bearer …`.
   */
  access_token: string;
  token_type: 'Bearer';
  /** Seconds until the access token expires. */
  expires_in: number;
  /** Opaque; exchanged once at the token endpoint for a new pair (rotation); a second time revokes the grant. */
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
 * Mints access tokens (JWTs, so the API verifies them by their signature, looking up only whether their
 * grant was revoked) and refresh tokens (kept, by hash, in the sandbox's state and so in the data file). A refresh token is single-use: refreshing
 * answers a new pair and retires the old token, as OAuth 2.0 Security BCP recommends. Every token
 * descends from one code exchange, its grant; a replay (a code or a retired refresh token presented
 * again) revokes the whole grant, since the sandbox cannot tell the rightful client from the one that
 * copied the token (RFC 6749 §4.1.2, RFC 6819 §5.2.2.3).
 */
export class TokenIssuer {
  readonly #options: TokenIssuerOptions;

  constructor(options: TokenIssuerOptions) {
    this.#options = options;
  }

  /** A new access token and refresh token of the grant `grantId`, for `sub`, through `clientId`, with `scope`. */
  issue(clientId: string, sub: string, scope: string, grantId: string): TokenResponse {
    const { state, signingKey, accessTokenTtlSeconds, refreshTokenTtlSeconds } = this.#options;
    const iat = Math.floor(Date.now() / 1000);
    const accessToken = signJwt(
      {
        sub,
        iat,
        exp: iat + accessTokenTtlSeconds,
        scope,
        client_id: clientId,
        jti: newId('tok'),
        grant_id: grantId,
      },
      signingKey,
    );
    const refreshToken = `rt_${randomBytes(32).toString('base64url')}`;
    const refreshTokenHash = hashToken(refreshToken);
    state.refreshTokens.set(refreshTokenHash, {
      token_hash: refreshTokenHash,
      grant_id: grantId,
      client_id: clientId,
      sub,
      scope,
      expires_at: iat + refreshTokenTtlSeconds,
    });
    state.changed();
    return {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: accessTokenTtlSeconds,
      refresh_token: refreshToken,
      scope,
    };
  }

  /**
   * Exchange `refreshToken` for a new pair. `clientId`, when the caller authenticated as a client, must
   * be the client the token was issued to; `scope`, when given, may only narrow the grant (RFC 6749 §6).
   * A request refused for either leaves the token usable; a token already exchanged revokes its grant.
   */
  refresh(refreshToken: string, clientId: string | undefined, scope: string | undefined): TokenResponse {
    const { state } = this.#options;
    const hash = hashToken(refreshToken);
    const used = state.usedRefreshTokens.get(hash);
    if (used !== undefined) {
      this.revokeGrant(used.grant_id);
      throw invalidGrant(
        'The refresh token was already used (each one is good once), so it may be a copy: every token of its grant is revoked; send the user through /oauth/authorize again.',
      );
    }
    const grant = state.refreshTokens.get(hash);
    if (grant === undefined) throw invalidGrant('The refresh token is unknown or revoked.');
    if (Date.now() / 1000 >= grant.expires_at) {
      state.refreshTokens.delete(hash);
      state.changed();
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
    // Retired, not forgotten: presenting it again must be told apart from an unknown token.
    state.refreshTokens.delete(hash);
    state.usedRefreshTokens.set(hash, {
      token_hash: hash,
      grant_id: grant.grant_id,
      expires_at: grant.expires_at,
    });
    return this.issue(grant.client_id, grant.sub, granted, grant.grant_id);
  }

  /**
   * Revoke the grant `grantId`: its refresh tokens, live or used, are forgotten, and the grant is noted
   * as revoked, which the API checks the `grant_id` of every access token against.
   */
  revokeGrant(grantId: string): void {
    const { state, accessTokenTtlSeconds } = this.#options;
    // Refused for as long as any of its access tokens may live: one issued just now, or one issued
    // before a restart under a longer --token-ttl, which the refresh token issued with it outlives.
    let until = Math.floor(Date.now() / 1000) + accessTokenTtlSeconds;
    for (const tokens of [state.refreshTokens, state.usedRefreshTokens]) {
      for (const [hash, token] of tokens) {
        if (token.grant_id !== grantId) continue;
        until = Math.max(until, token.expires_at);
        tokens.delete(hash);
      }
    }
    state.revokedGrants.set(grantId, Math.max(until, state.revokedGrants.get(grantId) ?? 0));
    state.changed();
  }
}
