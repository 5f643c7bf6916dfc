import { SENDER_SCHEDULE } from 'service-webhooks/core';
import { checkClient, isTestKey, type OAuthClient, type Sandbox, startSandbox } from '../sandbox/index.js';
import { type Io, numberFlag, parseFlags, stringFlag, UsageError } from './args.js';
import { ATTEMPT_TIMEOUT_SECONDS, SCHEDULE_IN_WORDS, wrap } from './help-text.js';
import { startupFailure, timestamp } from './startup-failure.js';
import { untilStopped } from './until-stopped.js';

const ABOUT = wrap(`A local stand-in for the service's sandbox API (/v1): users, projects, a payment
trigger and webhook registrations, with its authentication (Bearer sk_test_… keys, OAuth 2.0 access
tokens and HS256 JWTs), rate limits, error shapes and delivery schedule (${SCHEDULE_IN_WORDS}). Each
API key, and each OAuth user, has its own separate data. It runs until Ctrl-C: start it in a terminal
of its own.`);

/** `service-webhooks sandbox --help`. */
export const SANDBOX_HELP = `Usage: service-webhooks sandbox [options]

${ABOUT}

Options:
  --port PORT            port to listen on (default 4010; 0 picks a free one)
  --host HOST            address to listen on (default 127.0.0.1; on a loopback address a request is
                         answered only if its Host names it and no other site's page sent it, so a
                         web page cannot drive the sandbox by DNS rebinding)
  --allow-http           accept http:// webhook addresses, for receivers on localhost
                         (otherwise registering one is refused with 400 INVALID_REQUEST)
  --time-scale FACTOR    multiply the retry delays, e.g. 0.001 for ${SENDER_SCHEDULE.retryDelaysSeconds.join(', ')} ms (default 1)
  --attempt-timeout SEC  timeout of one delivery attempt (default ${ATTEMPT_TIMEOUT_SECONDS}, not scaled)
  --rate-limit N         requests per key per window (default 100, the Free plan)
  --rate-window SEC      rate-limit window (default 3600); X-RateLimit-Reset is in Unix seconds
  --api-key KEY          accept only this sk_test_ key (default: any well-formed sk_test_ key)
  --data FILE            keep the data in FILE (JSON, written atomically, mode 0600) across restarts;
                         its folder must exist, and the file must be yours, writable by you alone

OAuth 2.0 (authorization server on the same address: /oauth/authorize, /oauth/token):
  --oauth-client ID:SECRET:REDIRECT_URI[,REDIRECT_URI…]
                         register a client (repeatable); clients may also be listed in the data
                         file's "oauth_clients"
  --oauth-auto-approve   skip the consent page: GET /oauth/authorize redirects with a code at once
                         (otherwise approve by posting the page's form, decision=approve)
  --token-ttl SEC        lifetime of access tokens (default 3600; e.g. 2 to test expired_token)
  --jwt-secret KEY       HS256 key of access tokens and JWTs, at least 32 characters (default: the
                         data file's "jwt_signing_key", else random)
  --print-signing-key    print the JWT signing key at start, to mint or verify JWTs yourself; it is
                         not printed otherwise: whoever reads it can mint tokens for any user (HS256
                         is symmetric, so there is no public key or JWKS to publish instead)

Sandbox-only endpoints: POST /v1/sandbox/payments {"outcome":"succeeded|failed|refunded"},
GET /v1/sandbox/deliveries (every delivery and its attempts; free of rate limit).`;

/**
 * Read `--oauth-client ID:SECRET:REDIRECT_URI[,REDIRECT_URI…]`. The id and the secret end at the
 * first two colons; the rest is the redirect URIs, separated by commas.
 *
 * @example
 * ```ts
 * parseClientFlag('app:s3cret:http://localhost:3000/callback');
 * // { client_id: 'app', client_secret: 's3cret', redirect_uris: ['http://localhost:3000/callback'] }
 * ```
 */
export function parseClientFlag(text: string): OAuthClient {
  const first = text.indexOf(':');
  const second = first < 0 ? -1 : text.indexOf(':', first + 1);
  if (second < 0) {
    throw new Error(
      `--oauth-client must be ID:SECRET:REDIRECT_URI (e.g. app:s3cret:http://localhost:3000/callback), got ${text}.`,
    );
  }
  return checkClient(
    {
      client_id: text.slice(0, first),
      client_secret: text.slice(first + 1, second),
      redirect_uris: text.slice(second + 1).split(','),
    },
    `--oauth-client ${text.slice(0, first)}`,
  );
}

function clientFlags(value: string | boolean | string[] | undefined): OAuthClient[] {
  const texts = Array.isArray(value) ? value : typeof value === 'string' ? [value] : [];
  return texts.map((text) => {
    try {
      return parseClientFlag(text);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
  });
}

/**
 * Run `service-webhooks sandbox` until SIGINT or SIGTERM, or until `stop` is aborted (to run it in
 * process); answers the exit code.
 */
export async function runSandbox(argv: readonly string[], io: Io, stop?: AbortSignal): Promise<number> {
  const { flags } = parseFlags(argv, {
    port: { type: 'string' },
    host: { type: 'string' },
    'allow-http': { type: 'boolean' },
    'time-scale': { type: 'string' },
    'attempt-timeout': { type: 'string' },
    'rate-limit': { type: 'string' },
    'rate-window': { type: 'string' },
    'api-key': { type: 'string' },
    data: { type: 'string' },
    'oauth-client': { type: 'string', multiple: true },
    'oauth-auto-approve': { type: 'boolean' },
    'token-ttl': { type: 'string' },
    'jwt-secret': { type: 'string' },
    'print-signing-key': { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (flags.help) {
    io.out(SANDBOX_HELP);
    return 0;
  }
  const dataFile = stringFlag(flags, 'data', false);
  const apiKey = stringFlag(flags, 'api-key', false);
  if (apiKey !== undefined && !isTestKey(apiKey)) {
    throw new UsageError(`--api-key must be a test key (sk_test_ then letters, digits or _), got ${apiKey}.`);
  }
  const jwtSecret = stringFlag(flags, 'jwt-secret', false);
  if (jwtSecret !== undefined && jwtSecret.length < 32) {
    throw new UsageError('--jwt-secret must be at least 32 characters (HS256 wants a 256-bit key).');
  }
  const port = numberFlag(flags, 'port', 4010, { min: 0, max: 65_535 });
  const host = stringFlag(flags, 'host', false) ?? '127.0.0.1';
  const tokenTtl = numberFlag(flags, 'token-ttl', 3600, { min: 1 });
  const autoApprove = flags['oauth-auto-approve'] === true;
  let sandbox: Sandbox;
  try {
    sandbox = await startSandbox({
      port,
      host,
      allowHttp: flags['allow-http'] === true,
      timeScale: numberFlag(flags, 'time-scale', 1, { min: 0, integer: false }),
      attemptTimeoutMs:
        numberFlag(flags, 'attempt-timeout', ATTEMPT_TIMEOUT_SECONDS, { min: 0.001, integer: false }) * 1000,
      rateLimit: numberFlag(flags, 'rate-limit', 100, { min: 1 }),
      rateLimitWindowSeconds: numberFlag(flags, 'rate-window', 3600, { min: 1 }),
      oauthClients: clientFlags(flags['oauth-client']),
      oauthAutoApprove: autoApprove,
      accessTokenTtlSeconds: tokenTtl,
      ...(dataFile !== undefined && { dataFile }),
      ...(apiKey !== undefined && { apiKey }),
      ...(jwtSecret !== undefined && { jwtSecret }),
      log: (line) => io.out(`[${timestamp()}] ${line}`),
    });
  } catch (error) {
    const message = startupFailure(error, port, host);
    if (message === undefined) throw error;
    io.err(message);
    return 1;
  }
  // One write: a process reading the banner (a test, a supervisor) sees all of it once it sees a line.
  io.out(
    [
      `service-webhooks sandbox listening on ${sandbox.url}`,
      `  deliveries: GET ${sandbox.url}/sandbox/deliveries   data: ${dataFile ?? 'in memory'}`,
      `  oauth: ${sandbox.authUrl}/oauth/authorize, ${sandbox.authUrl}/oauth/token (access tokens last ${tokenTtl} s${autoApprove ? ', consent auto-approved' : ''})`,
      // The key mints tokens for any user: kept out of scrollback and CI logs unless asked for.
      `  jwt: HS256, signing key ${flags['print-signing-key'] === true ? sandbox.jwtSecret : 'not printed (--print-signing-key)'}`,
      '  stop with Ctrl-C',
    ].join('\n'),
  );

  await untilStopped(stop);
  await sandbox.close();
  io.out('sandbox stopped');
  return 0;
}
