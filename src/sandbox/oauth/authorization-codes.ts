import { randomBytes } from 'node:crypto';

/** What an authorization code stands for: consent given by `sub` to `client_id`. */
export interface CodeGrant {
  client_id: string;
  /** The redirect URI of the authorization request, which the exchange must repeat. */
  redirect_uri: string;
  /** Space-separated scopes consented to. */
  scope: string;
  sub: string;
}

/** The outcome of redeeming a code. */
export type Redemption =
  | { ok: true; grant: CodeGrant; issue(refreshTokenHash: string): void }
  | { ok: false; reason: 'unknown' | 'expired' }
  | { ok: false; reason: 'used'; refreshTokenHash: string | undefined };

interface Entry extends CodeGrant {
  expiresAt: number;
  used: boolean;
  refreshTokenHash: string | undefined;
}

/**
 * Authorization codes: in memory only (they live seconds, a restart may lose them), short-lived and
 * single-use. A used code is remembered until it expires, so a second exchange is told apart and
 * can revoke what the first one issued (RFC 6749 §4.1.2).
 */
export class AuthorizationCodes {
  readonly #codes = new Map<string, Entry>();
  readonly #ttlMs: number;
  readonly #now: () => number;

  /**
   * @param ttlMs - how long a code may be exchanged.
   * @param now - the clock, injectable for tests. @default Date.now
   */
  constructor(ttlMs: number, now: () => number = Date.now) {
    this.#ttlMs = ttlMs;
    this.#now = now;
  }

  /** A new code for `grant`. */
  issue(grant: CodeGrant): string {
    this.#forgetExpired();
    const code = randomBytes(24).toString('base64url');
    this.#codes.set(code, {
      ...grant,
      expiresAt: this.#now() + this.#ttlMs,
      used: false,
      refreshTokenHash: undefined,
    });
    return code;
  }

  /**
   * Redeem `code` once. On success, call `issue` with the refresh token handed out for it, so a
   * replayed code can revoke that token.
   */
  redeem(code: string): Redemption {
    const entry = this.#codes.get(code);
    if (entry === undefined) return { ok: false, reason: 'unknown' };
    if (this.#now() >= entry.expiresAt) {
      this.#codes.delete(code);
      return { ok: false, reason: 'expired' };
    }
    if (entry.used) return { ok: false, reason: 'used', refreshTokenHash: entry.refreshTokenHash };
    entry.used = true;
    const { client_id, redirect_uri, scope, sub } = entry;
    return {
      ok: true,
      grant: { client_id, redirect_uri, scope, sub },
      issue: (hash) => {
        entry.refreshTokenHash = hash;
      },
    };
  }

  #forgetExpired(): void {
    const now = this.#now();
    for (const [code, entry] of this.#codes) if (now >= entry.expiresAt) this.#codes.delete(code);
  }
}
