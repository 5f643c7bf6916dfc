import { type Io, numberFlag, parseFlags, stringFlag } from './args.js';
import { startSandbox } from './sandbox.js';

/** `service-webhooks sandbox --help`. */
export const SANDBOX_HELP = `Usage: service-webhooks sandbox [options]

A local stand-in for the service's sandbox API (/v1): users, projects, a payment trigger and webhook
registrations, with its authentication (Bearer sk_test_…), rate limits, error shapes and delivery
schedule (30 s per attempt; retries after 1, 5 and 15 minutes).

Options:
  --port PORT            port to listen on (default 4010; 0 picks a free one)
  --host HOST            address to listen on (default 127.0.0.1)
  --allow-http           accept http:// webhook addresses, for receivers on localhost
                         (otherwise registering one is refused with 400 INVALID_REQUEST)
  --time-scale FACTOR    multiply the retry delays, e.g. 0.001 for 60, 300, 900 ms (default 1)
  --attempt-timeout SEC  timeout of one delivery attempt (default 30, not scaled)
  --rate-limit N         requests per key per window (default 100, the Free plan)
  --rate-window SEC      rate-limit window (default 3600); X-RateLimit-Reset is in Unix seconds
  --api-key KEY          accept only this sk_test_ key (default: any well-formed sk_test_ key)
  --data FILE            keep the data in FILE (JSON, written atomically) across restarts

Sandbox-only endpoints: POST /v1/sandbox/payments {"outcome":"succeeded|failed|refunded"},
GET /v1/sandbox/deliveries (every delivery and its attempts; free of rate limit).`;

function timestamp(): string {
  return new Date().toISOString().slice(11, 23);
}

/** Run `service-webhooks sandbox` until SIGINT or SIGTERM; answers the exit code. */
export async function runSandbox(argv: readonly string[], io: Io): Promise<number> {
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
    help: { type: 'boolean', short: 'h' },
  });
  if (flags.help) {
    io.out(SANDBOX_HELP);
    return 0;
  }
  const dataFile = stringFlag(flags, 'data', false);
  const apiKey = stringFlag(flags, 'api-key', false);
  const sandbox = await startSandbox({
    port: numberFlag(flags, 'port', 4010, { min: 0, max: 65_535 }),
    host: stringFlag(flags, 'host', false) ?? '127.0.0.1',
    allowHttp: flags['allow-http'] === true,
    timeScale: numberFlag(flags, 'time-scale', 1, { min: 0, integer: false }),
    attemptTimeoutMs: numberFlag(flags, 'attempt-timeout', 30, { min: 0.001, integer: false }) * 1000,
    rateLimit: numberFlag(flags, 'rate-limit', 100, { min: 1 }),
    rateLimitWindowSeconds: numberFlag(flags, 'rate-window', 3600, { min: 1 }),
    ...(dataFile !== undefined && { dataFile }),
    ...(apiKey !== undefined && { apiKey }),
    log: (line) => io.out(`[${timestamp()}] ${line}`),
  });
  io.out(`service-webhooks sandbox listening on ${sandbox.url}`);
  io.out(`  deliveries: GET ${sandbox.url}/sandbox/deliveries   data: ${dataFile ?? 'in memory'}`);

  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await sandbox.close();
  io.out('sandbox stopped');
  return 0;
}
