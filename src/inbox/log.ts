/**
 * What the inbox says to the receiver's `logger` beside the delivery records: queue figures, retries
 * scheduled, dead letters, connection trouble.
 */
import { type InboxLogger, type InboxLogRecord, WebhookError } from 'service-webhooks/core';
import { describeFailure } from './attempt-outcome.js';

/**
 * Log `record` at `level` on the inbox's logger, if it has one. A logger that throws or rejects
 * changes nothing, as in the core.
 */
export function inboxLog(
  logger: InboxLogger | undefined,
  level: 'info' | 'warn' | 'error',
  record: InboxLogRecord,
  message: string,
): void {
  if (!logger) return;
  try {
    const result: unknown = logger[level](record, message);
    if (result instanceof Promise) result.catch(() => {});
  } catch {
    // An observer's failure must not stop a worker.
  }
}

/**
 * How an inbox line names the failure of a run. A failure out of `webhooks.process` (a `WebhookError`)
 * was reported by the receiver already, with its stack: the delivery record on the receiver's
 * `logger`, or `onError` for a poison entry. The worker's line says what it does next and names the
 * failure in one line (`error`), so one failure prints one stack. Any other error (the engine's own: a
 * stalled job, a worker that crashed) is the worker's to report: `err`, which pino's serializer and
 * console print with its stack.
 *
 * @example
 * ```ts
 * inboxLog(logger, 'warn', { jobId, ...failureFields(error) }, 'webhook inbox: attempt failed; retrying');
 * // { jobId, error: 'handler_failed: crm.example refused the contact' }
 * ```
 */
export function failureFields(error: unknown): { readonly error: string } | { readonly err: unknown } {
  return error instanceof WebhookError ? { error: describeFailure(error).message } : { err: error };
}
