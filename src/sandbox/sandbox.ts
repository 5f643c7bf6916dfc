import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SENDER_SCHEDULE } from 'service-webhooks/core';
import type { Account } from './account.js';
import { invalidRequest } from './api-errors.js';
import { createApiHandler } from './api-handler.js';
import { DEFAULT_TEST_KEY, isTestKey, keyAccount } from './api-keys.js';
import { DeliveryScheduler } from './delivery-scheduler.js';
import { sendJson } from './http-io.js';
import { isLoopbackHost } from './loopback.js';
import { answerClientError } from './malformed-requests.js';
import { AuthorizationCodes } from './oauth/authorization-codes.js';
import { createOAuthHandler } from './oauth/authorization-server.js';
import type { OAuthClient } from './oauth/clients.js';
import { TokenIssuer } from './oauth/token-issuer.js';
import { RateLimiter } from './rate-limiter.js';
import { allowedHosts, guardRefusal } from './request-guard.js';
import type { Delivery } from './resources.js';
import { Router } from './router.js';
import type { SandboxContext } from './routes/context.js';
import { registerDeliveryRoutes } from './routes/deliveries.js';
import { registerPaymentRoutes } from './routes/payments.js';
import { registerProjectRoutes } from './routes/projects.js';
import { registerUserRoutes } from './routes/users.js';
import { registerWebhookRoutes } from './routes/webhooks.js';
import { SandboxState } from './sandbox-state.js';

/** How {@link startSandbox} runs the sandbox. */
export interface SandboxOptions {
  /** Port to listen on; 0 picks a free one. @default 4010 */
  port?: number;
  /** Address to listen on. @default '127.0.0.1' */
  host?: string;
  /** Requests per key per window (the Free plan allows 100 per hour). @default 100 */
  rateLimit?: number;
  /** Length of the rate-limit window in seconds. @default 3600 */
  rateLimitWindowSeconds?: number;
  /**
   * Multiplies the sender's retry delays (`SENDER_SCHEDULE.retryDelaysSeconds`); 0.001 turns each delay
   * of N seconds into N milliseconds. @default 1
   */
  timeScale?: number;
  /** Timeout of one delivery attempt in milliseconds, not scaled. @default SENDER_SCHEDULE.attemptTimeoutMs */
  attemptTimeoutMs?: number;
  /** Register and deliver to `http://` addresses (loopback receivers). @default false */
  allowHttp?: boolean;
  /** JSON file the data is kept in across restarts; in memory only when omitted. */
  dataFile?: string;
  /**
   * Accept only this `sk_test_` key; any well-formed test key when omitted. Access tokens are accepted
   * either way. A version 1 data file's data becomes this key's account (else `sk_test_cli`'s).
   */
  apiKey?: string;
  /**
   * The account `apiKey`'s data lives in, when it should not be the key's own: the dev server's key is
   * new at each start, and its history stays in one account across starts. @default the key's account
   */
  apiKeyAccount?: string;
  /**
   * Refuse every request (the API, `/oauth`, the mount) whose `Host` is not this server's own name
   * with its port, or whose `Origin` is another site's: what stops a web page from reaching the
   * sandbox through DNS rebinding or a cross-origin form (see `guardRefusal`). Off, a server reached
   * by names it cannot know (a container's 0.0.0.0) answers them all.
   * @default true when `host` is loopback
   */
  checkHost?: boolean;
  /** OAuth clients, beside (and overriding by id) those saved in the data file. @default none */
  oauthClients?: readonly OAuthClient[];
  /** Approve every authorization request at once, without the consent page. @default false */
  oauthAutoApprove?: boolean;
  /** Lifetime of access tokens, whole seconds; short values let tests reach `expired_token`. @default 3600 */
  accessTokenTtlSeconds?: number;
  /** Lifetime of refresh tokens in seconds. @default 2_592_000 (30 days) */
  refreshTokenTtlSeconds?: number;
  /** Lifetime of authorization codes in seconds. @default 60 */
  authorizationCodeTtlSeconds?: number;
  /**
   * The HS256 key access tokens and JWTs are signed and verified with, at least 32 characters. The
   * sandbox never logs it (whoever holds it can mint tokens for any user); read it from
   * {@link Sandbox.jwtSecret}, or, from the CLI, start with `--print-signing-key`.
   * @default the key saved in the data file, else a random one (saved in the data file, if any)
   */
  jwtSecret?: string;
  /** Receives one line per API request and per delivery attempt. @default no logging */
  log?: (line: string) => void;
  /**
   * Answers requests outside `/v1` and `/oauth` before the API does (the dashboard of
   * `service-webhooks dev`): it answers the status it sent, or `undefined` to leave the request to the
   * API.
   */
  mount?: SandboxMount;
  /** Deliveries kept per account, the oldest settled dropped first. @default 1000 */
  historyLimit?: number;
  /** Called when a delivery is created, when an attempt leaves and when it ends. */
  onDeliveryChange?: (account: Account, delivery: Delivery) => void;
}

/** A handler answering some requests beside the API; `undefined` leaves the request to the API. */
export type SandboxMount = (
  request: IncomingMessage,
  response: ServerResponse,
  url: URL,
) => Promise<number> | undefined;

/** A running sandbox. */
export interface Sandbox {
  /** The API base address, ending in `/v1`, such as `http://127.0.0.1:4010/v1`. */
  readonly url: string;
  /**
   * The authorization server's address (the spec's `{auth_url}`): the same origin, without `/v1`, so
   * `${authUrl}/oauth/authorize` and `${authUrl}/oauth/token`.
   */
  readonly authUrl: string;
  readonly port: number;
  /**
   * The HS256 key in use, for minting or verifying JWTs of your own. Never logged: the CLI prints it
   * only with `--print-signing-key`.
   */
  readonly jwtSecret: string;
  /** The sandbox's own parts, for the dashboard of `service-webhooks dev`, which runs in-process. */
  readonly internals: { readonly state: SandboxState; readonly scheduler: DeliveryScheduler };
  /** Stop listening, stop delivering and save the data. */
  close(): Promise<void>;
}

// Configuration mistakes fail at start, with what to change.
function checkOptions(options: SandboxOptions): void {
  if (options.apiKey !== undefined && !isTestKey(options.apiKey)) {
    throw new Error(
      `apiKey must be a test key: sk_test_ followed by letters, digits or _; got ${options.apiKey}.`,
    );
  }
  if (options.jwtSecret !== undefined && options.jwtSecret.length < 32) {
    throw new Error('jwtSecret must be at least 32 characters (HS256 wants a 256-bit key).');
  }
  const ttl = options.accessTokenTtlSeconds;
  if (ttl !== undefined && (!Number.isSafeInteger(ttl) || ttl < 1)) {
    throw new Error(`accessTokenTtlSeconds must be a whole number of seconds, at least 1; got ${ttl}.`);
  }
}

/**
 * Start a local stand-in for the service's sandbox API on `node:http`: users, projects, a payment
 * trigger and webhook registrations under `/v1`, with the service's authentication (API keys, OAuth 2.0
 * access tokens and HS256 JWTs, scopes `read` and `write`), one separate account per key or token
 * user, rate limiting, error shapes and delivery schedule. The authorization server answers on the
 * same origin at `/oauth/authorize` and `/oauth/token`.
 *
 * @example
 * ```ts
 * const sandbox = await startSandbox({ port: 0, allowHttp: true, timeScale: 0.001 });
 * await fetch(`${sandbox.url}/users`, { method: 'POST', headers: { authorization: 'Bearer sk_test_1' }, body });
 * await sandbox.close();
 * ```
 */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  checkOptions(options);
  const log = options.log ?? (() => {});
  const legacyKey = options.apiKey ?? DEFAULT_TEST_KEY;
  const legacyAccount = options.apiKeyAccount ?? keyAccount(legacyKey);
  const state = await SandboxState.open(options.dataFile, legacyAccount, options.historyLimit);
  if (state.migrated) {
    log(
      `${options.dataFile} is a version 1 data file: its data now belongs to the key ${legacyKey} (accounts are separate per key); it is saved as version 2 on the next change.`,
    );
  }
  const signingKey = options.jwtSecret ?? state.jwtSigningKey ?? randomBytes(32).toString('base64url');
  if (state.jwtSigningKey !== signingKey) {
    // Saved so the tokens handed out stay valid across restarts of a sandbox with a data file.
    state.jwtSigningKey = signingKey;
    state.changed();
  }
  const scheduler = new DeliveryScheduler({
    state,
    timeScale: options.timeScale ?? 1,
    allowHttp: options.allowHttp ?? false,
    log,
    attemptTimeoutMs: options.attemptTimeoutMs ?? SENDER_SCHEDULE.attemptTimeoutMs,
    onChange: options.onDeliveryChange,
  });
  const context: SandboxContext = { scheduler, allowHttp: options.allowHttp ?? false };
  const router = new Router();
  registerUserRoutes(router, context);
  registerProjectRoutes(router, context);
  registerPaymentRoutes(router, context);
  registerWebhookRoutes(router, context);
  registerDeliveryRoutes(router);
  const limiter = new RateLimiter({
    limit: options.rateLimit ?? 100,
    windowMs: (options.rateLimitWindowSeconds ?? 3600) * 1000,
  });
  const oauth = createOAuthHandler({
    clients: new Map(
      [...state.oauthClients, ...(options.oauthClients ?? [])].map((client) => [client.client_id, client]),
    ),
    codes: new AuthorizationCodes((options.authorizationCodeTtlSeconds ?? 60) * 1000),
    tokens: new TokenIssuer({
      state,
      signingKey,
      accessTokenTtlSeconds: options.accessTokenTtlSeconds ?? 3600,
      refreshTokenTtlSeconds: options.refreshTokenTtlSeconds ?? 30 * 24 * 3600,
    }),
    autoApprove: options.oauthAutoApprove ?? false,
  });

  const api = createApiHandler({
    router,
    limiter,
    state,
    apiKey: options.apiKey,
    apiKeyAccount: options.apiKeyAccount,
    signingKey,
    log,
  });

  const boundHost = options.host ?? '127.0.0.1';
  const checkHost = options.checkHost ?? isLoopbackHost(boundHost);
  let allowed = allowedHosts(boundHost, options.port ?? 4010);

  // Async so that anything thrown becomes the rejection below. Every request passes the guard first,
  // whatever its path: one check, so no route (the API's, the OAuth server's, the mount's) can miss it.
  async function handle(request: IncomingMessage, response: ServerResponse): Promise<number> {
    const refusal = checkHost ? guardRefusal(request, allowed) : undefined;
    if (refusal !== undefined) {
      sendJson(response, refusal.status, { error: { code: refusal.code, message: refusal.message } });
      return refusal.status;
    }
    const target = request.url ?? '/';
    if (!URL.canParse(target, 'http://sandbox.invalid')) {
      const error = invalidRequest('path', 'is not a valid request target');
      sendJson(response, error.status, error.body);
      return error.status;
    }
    const url = new URL(target, 'http://sandbox.invalid');
    if (
      options.mount !== undefined &&
      !url.pathname.startsWith('/v1/') &&
      !url.pathname.startsWith('/oauth/')
    ) {
      const mounted = options.mount(request, response, url);
      if (mounted !== undefined) return mounted;
    }
    // The authorization server is not the API: no Bearer credential, no rate limit.
    if (url.pathname.startsWith('/oauth/')) return oauth(request, response, url);
    return api(request, response, url);
  }

  const server = createServer((request, response) => {
    handle(request, response).then(
      (status) => log(`${request.method} ${request.url} → ${status}`),
      (error: unknown) => {
        log(`could not answer ${request.method} ${request.url}: ${String(error)}`);
        response.destroy();
      },
    );
  });
  server.on('clientError', answerClientError);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 4010, options.host ?? '127.0.0.1', resolve);
  });
  scheduler.resume();
  const address = server.address() as AddressInfo;
  allowed = allowedHosts(boundHost, address.port);
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  return {
    url: `http://${host}:${address.port}/v1`,
    authUrl: `http://${host}:${address.port}`,
    port: address.port,
    jwtSecret: signingKey,
    internals: { state, scheduler },
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await scheduler.close();
      await state.flush();
    },
  };
}
