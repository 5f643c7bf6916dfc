import { type PostResult, postSigned } from '../sandbox/index.js';
import { type Flags, type Io, numberFlag, stringFlag, UsageError } from './args.js';
import { ATTEMPT_TIMEOUT_SECONDS } from './help-text.js';

/** How the same body is sent several times. */
export interface SendPlan {
  url: string;
  secret: string;
  /** How many times the body is sent. */
  repeat: number;
  /** How many sends run at once. */
  concurrency: number;
  timeoutMs: number;
}

/**
 * The plan `--url`, `--secret` (or the `WEBHOOK_SECRET` environment variable, which keeps the secret
 * out of shell history), `--repeat`, `--concurrency` and `--timeout` (seconds, the sender's own by
 * default) describe.
 */
export function planFromFlags(flags: Flags, env: NodeJS.ProcessEnv = process.env): SendPlan {
  const url = stringFlag(flags, 'url', true);
  // `localhost:3000/x` parses as a URL of scheme `localhost:`; only http(s) can be sent to.
  if (!/^https?:\/\//i.test(url) || !URL.canParse(url)) {
    throw new UsageError(
      `--url must be an http:// or https:// URL, such as http://${url.replace(/^[a-z]+:\/\//i, '')}; got ${url}.`,
    );
  }
  const secret = stringFlag(flags, 'secret', false) ?? env.WEBHOOK_SECRET;
  if (secret === undefined || secret === '') {
    throw new UsageError('--secret is required (or set WEBHOOK_SECRET).');
  }
  return {
    url,
    secret,
    repeat: numberFlag(flags, 'repeat', 1, { min: 1, max: 100_000 }),
    concurrency: numberFlag(flags, 'concurrency', 1, { min: 1, max: 1000 }),
    timeoutMs: numberFlag(flags, 'timeout', ATTEMPT_TIMEOUT_SECONDS, { min: 0.001, integer: false }) * 1000,
  };
}

/** Print one attempt: number, status (or why none), time, duplicate marker, start of the body. */
export function formatAttempt(index: number, result: PostResult): string {
  const status = result.status === null ? `error (${result.error})` : String(result.status);
  const duplicate = result.duplicate ? '  x-webhook-duplicate: true' : '';
  const body = result.body === '' ? '' : `  ${result.body.replace(/\s+/g, ' ')}`;
  return `#${index + 1}  ${status}  ${result.durationMs} ms${duplicate}${body}`;
}

/**
 * Send one body `repeat` times, at most `concurrency` at once, printing each attempt as it completes.
 * The bytes and the signature are identical every time, as when the service retries: a receiver
 * should run its handlers once and answer the copies 200 with `x-webhook-duplicate`.
 */
export async function sendAttempts(
  body: string,
  plan: SendPlan,
  io: Io,
  onAttempt?: (result: PostResult, startedAt: Date) => Promise<void>,
): Promise<PostResult[]> {
  const results: PostResult[] = new Array(plan.repeat);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < plan.repeat) {
      const index = next++;
      const startedAt = new Date();
      const result = await postSigned(plan.url, body, plan.secret, { timeoutMs: plan.timeoutMs });
      results[index] = result;
      io.out(formatAttempt(index, result));
      await onAttempt?.(result, startedAt);
    }
  };
  await Promise.all(Array.from({ length: Math.min(plan.concurrency, plan.repeat) }, worker));
  return results;
}

/** The closing line of a run, and whether every attempt was acknowledged. */
export function summarize(results: readonly PostResult[]): { line: string; ok: boolean } {
  const acknowledged = results.filter((result) => result.ok).length;
  const duplicates = results.filter((result) => result.duplicate).length;
  const failed = results.length - acknowledged;
  return {
    line: `${results.length} sent: ${acknowledged} acknowledged (2xx, ${duplicates} as duplicates), ${failed} not`,
    ok: failed === 0,
  };
}
