/**
 * What the inbox says to the receiver's `logger` beside the delivery records: queue figures, retries
 * scheduled, dead letters, connection trouble.
 */
/**
 * The records the inbox logs: `inbox` (the queue's name) and the figures or the event concerned, with
 * `err` on failures (the key pino's error serializer reads). Never a body or a secret.
 *
 * @example
 * ```ts
 * const logger: InboxLogger = { info: (record) => console.log(record.inbox, record), warn() {}, error() {} };
 * ```
 */
export interface InboxLogRecord {
  readonly inbox: string;
  readonly [field: string]: unknown;
}

/**
 * Where the inbox logs: `console` and pino loggers fit as they are, so pass the receiver's own.
 * Separate from the receiver's `logger` option, whose records are typed as delivery records.
 *
 * @example
 * ```ts
 * startInboxWorker(webhooks, { connection, logger: pino() });
 * ```
 */
export interface InboxLogger {
  info(record: InboxLogRecord, message?: string): unknown;
  warn(record: InboxLogRecord, message?: string): unknown;
  error(record: InboxLogRecord, message?: string): unknown;
}

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
