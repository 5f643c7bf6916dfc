/**
 * What the inbox says to the receiver's `logger` beside the delivery records: queue figures, retries
 * scheduled, dead letters, connection trouble.
 */
import type { InboxLogger, InboxLogRecord } from 'service-webhooks/core';

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
