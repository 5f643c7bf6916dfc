import { randomBytes } from 'node:crypto';
import { newId } from '../ids.js';

/** What an authorization code stands for: consent given by `sub` to `client_id`. */
export interface CodeGrant {
  client_id: string;
  /** The redirect URI of the authorization request, which the exchange must repeat. */
  redirect_uri: string;
  /** Space-separated scopes consented to. */
  scope: string;
  sub: string;
  /** The grant the code's tokens, and every token rotated from them, belong to. */
  grant_id: string;
}

/** Who is exchanging a code: the authenticated client, and the redirect URI it sent. */
export interface CodeExchange {
  client_id: string;
  redirect_uri: string;
}

/**
 * The outcome of redeeming a code. `client` and `redirect_uri` leave the code unused: the rightful
 * client may still exchange it. `used` names the grant the first exchange started, to revoke it.
 */
export type Redemption =
  | { ok: true; grant: CodeGrant }
  | { ok: false; reason: 'unknown' | 'expired' | 'client' | 'redirect_uri' }
  | { ok: false; reason: 'used'; grantId: string };

interface Entry extends CodeGrant {
  expiresAt: number;
  used: boolean;
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

  /** A new code for the consent `grant`; the code starts a grant of its own. */
  issue(grant: Omit<CodeGrant, 'grant_id'>): string {
    this.#forgetExpired();
    const code = randomBytes(24).toString('base64url');
    this.#codes.set(code, {
      ...grant,
      grant_id: newId('grt'),
      expiresAt: this.#now() + this.#ttlMs,
      used: false,
    });
    return code;
  }

  /**
   * Redeem `code` for `exchange`. The code is used up only when the exchange succeeds: its client and
   * redirect URI are checked first (RFC 6749 §4.1.3), so a request that fails them, by mistake or by
   * someone who intercepted the code, cannot spend the rightful client's code.
   */
  redeem(code: string, exchange: CodeExchange): Redemption {
    const entry = this.#codes.get(code);
    if (entry === undefined) return { ok: false, reason: 'unknown' };
    if (this.#now() >= entry.expiresAt) {
      this.#codes.delete(code);
      return { ok: false, reason: 'expired' };
    }
    // Before the binding checks: a used code presented again is a replay whoever presents it.
    if (entry.used) return { ok: false, reason: 'used', grantId: entry.grant_id };
    if (entry.client_id !== exchange.client_id) return { ok: false, reason: 'client' };
    if (entry.redirect_uri !== exchange.redirect_uri) return { ok: false, reason: 'redirect_uri' };
    entry.used = true;
    const { client_id, redirect_uri, scope, sub, grant_id } = entry;
    return { ok: true, grant: { client_id, redirect_uri, scope, sub, grant_id } };
  }

  #forgetExpired(): void {
    const now = this.#now();
    for (const [code, entry] of this.#codes) if (now >= entry.expiresAt) this.#codes.delete(code);
  }
}
