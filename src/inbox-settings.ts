/**
 * What every inbox engine's worker is configured with, whatever the engine: the retry schedule, its
 * defaults, the monitor's thresholds and the logger. Part of the core, so that each engine's subpath
 * and the testing kit share one declaration of them (and the CLI one copy at run time).
 */

/**
 * The delays between attempts: an exponential schedule, or the delays themselves.
 *
 * - `{ initialDelayMs, multiplier, maxDelayMs, jitter }`: the n-th retry waits
 *   `initialDelayMs × multiplier^(n-1)`, at most `maxDelayMs`, less up to `jitter` of it at random
 *   (so events that failed together during an outage do not all come back in the same second).
 * - An array of delays in milliseconds: the n-th retry waits the n-th delay, and every retry past
 *   the end of the array the last one.
 *
 * @example
 * ```ts
 * const gentle: InboxBackoff = { initialDelayMs: 30_000, maxDelayMs: 6 * 3_600_000 };
 * const explicit: InboxBackoff = [60_000, 300_000, 3_600_000, 6 * 3_600_000];
 * ```
 */
export type InboxBackoff =
  | {
      /** @default 10_000 */
      readonly initialDelayMs?: number;
      /** @default 2 */
      readonly multiplier?: number;
      /** @default 14_400_000 (4 hours) */
      readonly maxDelayMs?: number;
      /** From 0 (none) to 1. @default 0.1 */
      readonly jitter?: number;
    }
  | readonly number[];

/**
 * The default schedule and attempt limit: retries after 10 s, 20 s, 40 s ... doubling up to 4 hours,
 * 25 attempts in all, the last about 2.4 days after the first.
 *
 * @example
 * ```ts
 * startInboxWorker(webhooks, { connection, attempts: INBOX_DEFAULTS.attempts * 2 });
 * ```
 */
export const INBOX_DEFAULTS = /* @__PURE__ */ Object.freeze({
  attempts: 25,
  backoff: Object.freeze({ initialDelayMs: 10_000, multiplier: 2, maxDelayMs: 14_400_000, jitter: 0.1 }),
});

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
 * The worker's monitor: how often it samples the inbox, and the thresholds it reports to `onError`.
 *
 * @example
 * ```ts
 * startInboxWorker(webhooks, { connection, monitor: { intervalMs: 30_000, maxDepth: 10_000, maxWaitMs: 300_000 } });
 * ```
 */
export interface InboxMonitorOptions {
  /**
   * How often the figures are read and logged (`info`, message `webhook inbox`).
   * @default 60_000
   */
  readonly intervalMs?: number;
  /** Report an {@link InboxBacklogError} when more events than this are queued (`depth`). */
  readonly maxDepth?: number;
  /**
   * Report an {@link InboxBacklogError} when the next event to run was received longer ago than this.
   * @default 600_000 (10 minutes)
   */
  readonly maxWaitMs?: number;
}
