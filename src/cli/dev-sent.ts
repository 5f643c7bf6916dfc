import type { SentRecord } from '../dashboard/api-types.js';
import { DEV_TOKEN_HEADER, DEV_URL_ENV } from '../dev/report.js';
import { isLoopbackHost, type PostResult } from '../sandbox/index.js';

/** A dashboard that does not answer within this is left alone: the send itself has already happened. */
const POST_TIMEOUT_MS = 2_000;

/**
 * Where `service-webhooks send` tells a running `service-webhooks dev` what it sent, so the dashboard
 * lists it (label `cli`) and joins the receiver's report to it: the report address the dev command
 * prints (`SERVICE_WEBHOOKS_DEV_URL`, the same variable the receiver's devReporter reads; its token
 * may post reports and sent attempts, nothing else). `undefined` without one, or when it is not on
 * loopback (what is sent carries the event).
 *
 * @example
 * ```ts
 * const dashboard = dashboardFor(process.env);
 * if (dashboard) await dashboard.tell(event, url, result, startedAt);
 * ```
 */
export function dashboardFor(
  env: NodeJS.ProcessEnv,
  err: (line: string) => void,
): { tell(event: object, url: string, result: PostResult, startedAt: Date): Promise<void> } | undefined {
  const address = env[DEV_URL_ENV];
  if (address === undefined || address === '' || !URL.canParse(address)) return undefined;
  const report = new URL(address);
  if (!isLoopbackHost(report.hostname)) return undefined;
  const token = report.searchParams.get('token') ?? '';
  const target = new URL('/_dev/api/sent', report.origin);
  let failureShown = false;
  return {
    async tell(event, url, result, startedAt) {
      const record: SentRecord = {
        event: event as Record<string, unknown>,
        url,
        started_at: startedAt.toISOString(),
        duration_ms: result.durationMs,
        status: result.status,
        error: result.error,
        response_body: result.body,
        code: result.code,
        duplicate: result.duplicate,
        retry_after: result.retryAfter,
        request_headers: result.requestHeaders,
        response_headers: result.responseHeaders,
      };
      try {
        const answer = await fetch(target, {
          method: 'POST',
          headers: { 'content-type': 'application/json', [DEV_TOKEN_HEADER]: token },
          body: JSON.stringify(record),
          redirect: 'manual',
          signal: AbortSignal.timeout(POST_TIMEOUT_MS),
        });
        await answer.body?.cancel();
        if (answer.status !== 201) throw new Error(`it answered ${answer.status}`);
      } catch (error) {
        if (failureShown) return;
        failureShown = true;
        err(
          `Could not show this send on the dashboard at ${report.origin} (${DEV_URL_ENV}): ${error instanceof Error ? error.message : String(error)}. The send itself is as printed.`,
        );
      }
    },
  };
}
