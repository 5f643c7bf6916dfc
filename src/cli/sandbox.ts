import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError, invalidApiKey, requestError } from './api-errors.js';
import { authenticate } from './auth.js';
import { DeliveryScheduler } from './delivery-scheduler.js';
import { readJsonBody, sendJson } from './http-io.js';
import { newId } from './ids.js';
import { RateLimiter, type RateLimitStatus } from './rate-limiter.js';
import { Router } from './router.js';
import type { SandboxContext } from './routes/context.js';
import { registerDeliveryRoutes } from './routes/deliveries.js';
import { registerPaymentRoutes } from './routes/payments.js';
import { registerProjectRoutes } from './routes/projects.js';
import { registerUserRoutes } from './routes/users.js';
import { registerWebhookRoutes } from './routes/webhooks.js';
import { SandboxStore } from './store.js';

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
  /** Multiplies the retry delays (1, 5, 15 minutes); 0.001 makes them 60, 300, 900 ms. @default 1 */
  timeScale?: number;
  /** Timeout of one delivery attempt in milliseconds, not scaled. @default 30_000 */
  attemptTimeoutMs?: number;
  /** Register and deliver to `http://` addresses (loopback receivers). @default false */
  allowHttp?: boolean;
  /** JSON file the data is kept in across restarts; in memory only when omitted. */
  dataFile?: string;
  /** Accept only this `sk_test_` key; any well-formed test key when omitted. */
  apiKey?: string;
  /** Receives one line per API request and per delivery attempt. @default no logging */
  log?: (line: string) => void;
}

/** A running sandbox. */
export interface Sandbox {
  /** The API base address, ending in `/v1`, such as `http://127.0.0.1:4010/v1`. */
  readonly url: string;
  readonly port: number;
  /** Stop listening, stop delivering and save the data. */
  close(): Promise<void>;
}

// Inspection endpoints are tooling, not the emulated API: they answer with the headers but are free.
function isFree(method: string, path: string): boolean {
  return method === 'GET' && path.startsWith('/sandbox/deliveries');
}

function rateLimitHeaders(status: RateLimitStatus): Record<string, string> {
  return {
    'x-ratelimit-limit': String(status.limit),
    'x-ratelimit-remaining': String(status.remaining),
    'x-ratelimit-reset': String(status.resetAt),
  };
}

/**
 * Start a local stand-in for the service's sandbox API on `node:http`: users, projects, a payment
 * trigger and webhook registrations under `/v1`, with the service's authentication, rate limiting,
 * error shapes and delivery schedule.
 *
 * @example
 * ```ts
 * const sandbox = await startSandbox({ port: 0, allowHttp: true, timeScale: 0.001 });
 * await fetch(`${sandbox.url}/users`, { method: 'POST', headers: { authorization: 'Bearer sk_test_1' }, body });
 * await sandbox.close();
 * ```
 */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const log = options.log ?? (() => {});
  const store = await SandboxStore.open(options.dataFile);
  const scheduler = new DeliveryScheduler({
    store,
    timeScale: options.timeScale ?? 1,
    allowHttp: options.allowHttp ?? false,
    log,
    ...(options.attemptTimeoutMs !== undefined && { attemptTimeoutMs: options.attemptTimeoutMs }),
  });
  const context: SandboxContext = { store, scheduler, allowHttp: options.allowHttp ?? false };
  const router = new Router();
  registerUserRoutes(router, context);
  registerProjectRoutes(router, context);
  registerPaymentRoutes(router, context);
  registerWebhookRoutes(router, context);
  registerDeliveryRoutes(router, context);
  const limiter = new RateLimiter({
    limit: options.rateLimit ?? 100,
    windowMs: (options.rateLimitWindowSeconds ?? 3600) * 1000,
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<number> {
    const requestId = newId('req');
    const method = request.method ?? 'GET';
    const url = new URL(request.url ?? '/', 'http://sandbox.invalid');
    const path = url.pathname.startsWith('/v1/') ? url.pathname.slice(3) : undefined;
    const auth = authenticate(request.headers.authorization, options.apiKey);
    // Callers without a valid key are counted by address, so a flood of bad keys is limited too.
    const bucket = auth.ok ? `key:${auth.key}` : `address:${request.socket.remoteAddress}`;
    const rate = limiter.take(bucket, path === undefined || !isFree(method, path));
    const headers = { ...rateLimitHeaders(rate), 'x-request-id': requestId };
    try {
      if (!rate.allowed) {
        throw new ApiError(
          429,
          {
            error: { code: 'rate_limit_exceeded', message: `Rate limit of ${rate.limit} requests exceeded.` },
          },
          { 'retry-after': String(rate.retryAfterSeconds) },
        );
      }
      if (!auth.ok) throw invalidApiKey(auth.message);
      if (path === undefined) throw requestError(404, 'not_found', 'Every API path starts with /v1/.');
      const match = router.match(method, path);
      if (match.kind === 'not_found') throw requestError(404, 'not_found', `No route ${method} /v1${path}.`);
      if (match.kind === 'method_not_allowed') {
        const allow = match.allow.join(', ');
        throw new ApiError(
          405,
          { error: { code: 'method_not_allowed', message: `Use ${allow}.` } },
          { allow },
        );
      }
      const body = method === 'POST' || method === 'PUT' ? await readJsonBody(request) : undefined;
      const result = await match.handler({ params: match.params, query: url.searchParams, body, requestId });
      sendJson(response, result.status, result.body, headers);
      return result.status;
    } catch (error) {
      if (error instanceof ApiError) {
        sendJson(response, error.status, error.body, { ...headers, ...error.headers });
        return error.status;
      }
      log(`internal error on ${method} ${url.pathname}: ${String(error)}`);
      sendJson(response, 500, { error: { code: 'internal_error', message: 'The sandbox failed.' } }, headers);
      return 500;
    }
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
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 4010, options.host ?? '127.0.0.1', resolve);
  });
  scheduler.resume();
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  return {
    url: `http://${host}:${address.port}/v1`,
    port: address.port,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await scheduler.close();
      await store.flush();
    },
  };
}
