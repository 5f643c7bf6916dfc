/**
 * `devReporter()`: a `WebhookLogger` that also tells the local dashboard of `service-webhooks dev` what
 * the receiver decided about each delivery (outcome, status, code, duration, error with its causes,
 * which secret matched, late). Without a dashboard address it is the logger it wraps, or no logger at
 * all: the receiver's stderr output is what it is without one.
 *
 * @packageDocumentation
 */
import {
  ConfigurationError,
  type DeliveryRecord,
  KEEPS_STDERR,
  WANTS_HANDLER_STEPS,
  type WebhookLogger,
} from 'service-webhooks/core';
import { isLoopbackHost } from '../sandbox/loopback.js';
import {
  DEV_TOKEN_HEADER,
  DEV_URL_ENV,
  MAX_BATCH_BYTES,
  MAX_REPORTED_MESSAGE_CHARS,
  MAX_REPORTED_STACK_CHARS,
  type ReceiverReport,
  type ReportedError,
} from './report.js';

/**
 * How {@link devReporter} behaves. Every field is optional: `devReporter()` reads the dashboard's
 * address from `SERVICE_WEBHOOKS_DEV_URL`, and stderr shows what it shows without a logger.
 *
 * @example
 * ```ts
 * import pino from 'pino';
 * import { createWebhooks } from 'service-webhooks';
 * import { devReporter } from 'service-webhooks/dev';
 * const webhooks = createWebhooks({
 *   secret: process.env.WEBHOOK_SECRET!,
 *   logger: devReporter({ logger: pino(), flushIntervalMs: 20 }),
 * });
 * ```
 */
export interface DevReporterOptions {
  /**
   * The report address the dashboard shows (`http://127.0.0.1:4010/_dev/api/report?token=…`). Its
   * `token` query parameter is sent as the `x-service-webhooks-dev-token` header, never in the URL.
   * Only loopback hosts are reported to (127.0.0.0/8, `::1`, `localhost`): reports carry error stacks.
   * @default process.env.SERVICE_WEBHOOKS_DEV_URL, read once when the reporter is created
   */
  readonly url?: string | undefined;
  /**
   * Your own logger: every record is passed to it first, unchanged and synchronously, and what it
   * returns is returned (so a logger's promise is watched by the receiver as before).
   */
  readonly logger?: WebhookLogger | undefined;
  /**
   * How long the first record waits for others before a batch is posted (milliseconds, > 0). The
   * dashboard shows a delivery within 100 ms of its answer with the default.
   * @default 50
   */
  readonly flushIntervalMs?: number | undefined;
  /**
   * Most records waiting to be posted (a whole number, ≥ 1). Beyond it the oldest are dropped (while the
   * dashboard is slow or gone), and the number dropped is said once on stderr.
   * @default 1000
   */
  readonly maxQueued?: number | undefined;
  /**
   * Most bytes of records waiting to be posted (as posted: UTF-8 JSON; a whole number, ≥ 1024). Beyond it
   * the oldest are dropped, as beyond `maxQueued`. Each error's message is cut to 4,096 characters and
   * its stack to 16,384 before it is queued, so one record weighs at most about 80 KB (an error and
   * three causes), a failure with a stack usually 2 to 4 KB. The default is what the dashboard reads in
   * one post: hundreds of failures, while a receiver whose dashboard is gone keeps 1 MiB at most.
   * @default 1048576
   */
  readonly maxQueuedBytes?: number | undefined;
}

/** What waits in a {@link DevReporter} to be posted, and what it dropped. */
export interface DevReporterQueue {
  /** Records waiting (the post in flight, if any, not counted). */
  readonly records: number;
  /** Their bytes, as they will be posted (UTF-8 JSON). */
  readonly bytes: number;
  /** Records dropped since the reporter was made: beyond `maxQueued` or `maxQueuedBytes`. */
  readonly dropped: number;
}

/**
 * What {@link devReporter} returns: a `WebhookLogger` for `createWebhooks({ logger })` or an inbox
 * worker, with `flush()` while it reports (and on the no-op it returns without a logger). When
 * `devReporter` hands back your own logger (no dashboard address), `flush` is whatever that logger has,
 * if anything, so call it as `await reporter.flush?.()`.
 *
 * @example
 * ```ts
 * import { createWebhooks } from 'service-webhooks';
 * import { devReporter } from 'service-webhooks/dev';
 * const logger = devReporter();
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, logger });
 * // In a serverless handler, before returning:
 * await logger.flush?.();
 * ```
 */
export type DevReporter = WebhookLogger & {
  /**
   * Resolves once every record logged so far was posted to the dashboard (or its post failed). Never
   * rejects.
   */
  flush?(): Promise<void>;
  /** What waits to be posted and how many records were dropped (zeros on the no-op). */
  queued?(): DevReporterQueue;
};

const DEFAULT_FLUSH_INTERVAL_MS = 50;
const DEFAULT_MAX_QUEUED = 1_000;
const DEFAULT_MAX_QUEUED_BYTES = MAX_BATCH_BYTES;
const MIN_MAX_QUEUED_BYTES = 1_024;
/** `{"records":[` and `]}` around the records of a post. */
const BATCH_ENVELOPE_BYTES = 14;
/** A dashboard that does not answer within this is treated as gone for that batch. */
const POST_TIMEOUT_MS = 2_000;
/** Causes below the reported error, at most. */
const MAX_CAUSE_DEPTH = 3;
/** An error's name or code longer than this is not a name: cut like a message. */
const MAX_NAME_CHARS = 256;
const PREFIX = '[service-webhooks] devReporter:';

type Level = ReceiverReport['level'];

/**
 * Without a logger of yours, the reporter only looks on: the receiver still says on stderr what it says
 * without a logger (a failure, a wrong secret), whether or not a dashboard takes the reports. Left in
 * production, it hides nothing.
 */
function lookingOn<Logger extends object>(logger: Logger): Logger {
  return Object.defineProperty(logger, KEEPS_STDERR, { value: true });
}

/** The dashboard shows which handlers ran: the reporter asks the receiver for each one's step. */
function askingForSteps<Logger extends object>(logger: Logger): Logger {
  return Object.defineProperty(logger, WANTS_HANDLER_STEPS, { value: true });
}

const NO_OP: DevReporter = Object.freeze(
  lookingOn<DevReporter>({
    info() {},
    warn() {},
    error() {},
    flush: () => Promise.resolve(),
    queued: () => ({ records: 0, bytes: 0, dropped: 0 }),
  }),
);

/**
 * A logger for `createWebhooks({ logger })` that reports every answered delivery to the local dashboard
 * of `service-webhooks dev`, batched, in the background.
 *
 * - No address (`url` unset and `SERVICE_WEBHOOKS_DEV_URL` unset or empty), the production case: it
 *   returns `options.logger` itself, or a no-op logger that only looks on (`KEEPS_STDERR`): the receiver
 *   prints on stderr what it prints without a logger (a handler's failure, a wrong secret). Nothing is
 *   scheduled, nothing is sent, so `devReporter()` and `devReporter({ logger })` are safe to leave in
 *   production code.
 * - `NODE_ENV=production` with an address set: the same, with one warning on stderr (a dev tool).
 * - An address whose host is not loopback (127.0.0.0/8, `::1`, `localhost`): the same, with one warning.
 *   Reports carry error messages and stacks; they must not leave the machine because of a typo'd
 *   environment variable.
 * - Otherwise each record becomes a `ReceiverReport` (never a body or a secret: records hold neither;
 *   messages cut to 4,096 characters, stacks to 16,384), posted in batches of at most 1 MiB with one post
 *   in flight at a time, by an unref'd timer that never keeps the process alive. Without a logger of
 *   yours, stderr still shows what it shows without a logger. The queue is bounded (`maxQueued`,
 *   `maxQueuedBytes`; the oldest dropped, counted). A redirect is not followed. A dashboard that is
 *   down, redirects or refuses the token never throws into the receiver: it is said once on stderr, and
 *   that batch is dropped.
 *
 * @throws ConfigurationError (code `invalid_configuration`), as every option check of the package
 * does, when an option is malformed: an address that is not an http(s) URL, a `flushIntervalMs` that
 * is not a positive number, a `maxQueued` that is not a positive whole number, a `maxQueuedBytes` that
 * is not a whole number of at least 1024, a `logger` without `info`, `warn` and `error`.
 *
 * @example
 * ```ts
 * import { createWebhooks } from 'service-webhooks';
 * import { devReporter } from 'service-webhooks/dev';
 * // SERVICE_WEBHOOKS_DEV_URL=http://127.0.0.1:4010/_dev/api/report?token=… (shown by `service-webhooks dev`)
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, logger: devReporter() });
 * ```
 */
export function devReporter(options: DevReporterOptions = {}): DevReporter {
  if (typeof options !== 'object' || options === null)
    throw new ConfigurationError(
      'devReporter(options) takes an object: { url?, logger?, flushIntervalMs?, maxQueued?, maxQueuedBytes? }.',
    );
  const { logger } = options;
  if (
    logger !== undefined &&
    (typeof logger !== 'object' ||
      logger === null ||
      typeof logger.info !== 'function' ||
      typeof logger.warn !== 'function' ||
      typeof logger.error !== 'function')
  )
    throw new ConfigurationError(
      'devReporter({ logger }) needs an object with info, warn and error methods (pino, bunyan, console…), or leave it out.',
    );
  const flushIntervalMs = options.flushIntervalMs ?? DEFAULT_FLUSH_INTERVAL_MS;
  if (typeof flushIntervalMs !== 'number' || !Number.isFinite(flushIntervalMs) || flushIntervalMs <= 0)
    throw new ConfigurationError(
      `devReporter({ flushIntervalMs }) must be a positive number of milliseconds (got ${String(flushIntervalMs)}); leave it out for ${DEFAULT_FLUSH_INTERVAL_MS}.`,
    );
  const maxQueued = options.maxQueued ?? DEFAULT_MAX_QUEUED;
  if (typeof maxQueued !== 'number' || !Number.isSafeInteger(maxQueued) || maxQueued < 1)
    throw new ConfigurationError(
      `devReporter({ maxQueued }) must be a whole number of at least 1 (got ${String(maxQueued)}); leave it out for ${DEFAULT_MAX_QUEUED}.`,
    );
  const maxQueuedBytes = options.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES;
  if (
    typeof maxQueuedBytes !== 'number' ||
    !Number.isSafeInteger(maxQueuedBytes) ||
    maxQueuedBytes < MIN_MAX_QUEUED_BYTES
  )
    throw new ConfigurationError(
      `devReporter({ maxQueuedBytes }) must be a whole number of at least ${MIN_MAX_QUEUED_BYTES} (got ${String(maxQueuedBytes)}); leave it out for ${DEFAULT_MAX_QUEUED_BYTES}.`,
    );

  const fromOption = options.url !== undefined;
  const raw = fromOption ? options.url : process.env[DEV_URL_ENV];
  if (fromOption && typeof raw !== 'string')
    throw new ConfigurationError(`devReporter({ url }) must be a string (got ${typeof raw}).`);
  const idle: DevReporter = logger ?? NO_OP;
  if (raw === undefined || raw.trim() === '') return idle;

  const target = parseTarget(raw.trim(), fromOption);
  if (process.env.NODE_ENV === 'production') {
    console.warn(
      `${PREFIX} NODE_ENV is production, so nothing is reported to ${target.shown} (a development tool); unset ${DEV_URL_ENV} in production.`,
    );
    return idle;
  }
  if (!isLoopbackHost(target.url.hostname)) {
    console.warn(
      `${PREFIX} not reporting to ${target.shown}: only a loopback host (127.0.0.1, ::1, localhost) is reported to, since reports carry error messages and stacks. Check ${fromOption ? 'the url option' : DEV_URL_ENV}.`,
    );
    return idle;
  }
  return new Reporter(target, logger, flushIntervalMs, {
    records: maxQueued,
    bytes: maxQueuedBytes,
  }).logger();
}

interface Target {
  /** Where batches are posted: the address without its `token` parameter. */
  readonly url: URL;
  /** The same, as said in warnings. */
  readonly shown: string;
  readonly token: string | undefined;
}

function parseTarget(raw: string, fromOption: boolean): Target {
  const where = fromOption ? 'devReporter({ url })' : DEV_URL_ENV;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigurationError(
      `${where} is not a URL: copy the report address \`service-webhooks dev\` shows (http://127.0.0.1:<port>/_dev/api/report?token=…).`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigurationError(`${where} must be an http:// or https:// URL (got ${url.protocol}).`);
  const token = url.searchParams.get('token') ?? undefined;
  url.searchParams.delete('token');
  url.username = '';
  url.password = '';
  url.hash = '';
  return { url, shown: url.href, token };
}

/** How much may wait to be posted. */
interface QueueBounds {
  readonly records: number;
  readonly bytes: number;
}

class Reporter {
  readonly #target: Target;
  readonly #inner: WebhookLogger | undefined;
  readonly #intervalMs: number;
  readonly #bounds: QueueBounds;
  /** Each record as it will be posted (JSON), and its UTF-8 bytes: what is kept is what is counted. */
  #queue: string[] = [];
  #sizes: number[] = [];
  #queuedBytes = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #inFlight: Promise<void> | undefined;
  /** Records taken in, and records posted, failed or dropped: flush waits for the second to catch up. */
  #taken = 0;
  #settled = 0;
  #dropped = 0;
  #dropsShown = false;
  #failureShown = false;

  constructor(target: Target, inner: WebhookLogger | undefined, intervalMs: number, bounds: QueueBounds) {
    this.#target = target;
    this.#inner = inner;
    this.#intervalMs = intervalMs;
    this.#bounds = bounds;
  }

  logger(): DevReporter {
    const logger: DevReporter = {
      info: (record, message) => this.#log('info', record, message),
      warn: (record, message) => this.#log('warn', record, message),
      error: (record, message) => this.#log('error', record, message),
      flush: () => this.#flush(),
      queued: () => ({ records: this.#queue.length, bytes: this.#queuedBytes, dropped: this.#dropped }),
    };
    askingForSteps(logger);
    return this.#inner === undefined ? lookingOn(logger) : logger;
  }

  #log(level: Level, record: DeliveryRecord, message: string | undefined): unknown {
    const inner = this.#inner;
    try {
      // The inner logger first, unchanged: what it throws or returns is the receiver's to watch.
      return inner ? inner[level](record, message) : undefined;
    } finally {
      this.#take(level, record, message);
    }
  }

  #take(level: Level, record: DeliveryRecord, message: string | undefined): void {
    let json: string;
    try {
      // Serialised now, from the cut strings: the queue holds no reference to a 100 KB message.
      json = JSON.stringify(toReport(level, record, message));
    } catch {
      return; // A record this cannot read is not worth a receiver's answer.
    }
    this.#taken++;
    const bytes = utf8Bytes(json);
    if (bytes > this.#bounds.bytes || bytes > MAX_BATCH_BYTES - BATCH_ENVELOPE_BYTES) {
      this.#drop(); // Larger than any post (an event id of megabytes): it could never be sent.
      return;
    }
    this.#queue.push(json);
    this.#sizes.push(bytes);
    this.#queuedBytes += bytes;
    // The oldest go first: the newest are the deliveries a developer is looking at when the dashboard
    // answers again.
    while (this.#queue.length > this.#bounds.records || this.#queuedBytes > this.#bounds.bytes) {
      this.#queue.shift();
      this.#queuedBytes -= this.#sizes.shift()!;
      this.#drop();
    }
    this.#schedule();
  }

  #drop(): void {
    this.#dropped++;
    this.#settled++;
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#inFlight !== undefined || this.#queue.length === 0) return;
    const timer = setTimeout(() => {
      this.#timer = undefined;
      this.#send();
    }, this.#intervalMs);
    timer.unref?.();
    this.#timer = timer;
  }

  /** Posts what is queued, as much as one post holds, unless a post is in flight (the next waits for it). */
  #send(): void {
    if (this.#inFlight !== undefined || this.#queue.length === 0) return;
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    let count = 0;
    let bytes = BATCH_ENVELOPE_BYTES;
    while (
      count < this.#queue.length &&
      bytes + this.#sizes[count]! + (count > 0 ? 1 : 0) <= MAX_BATCH_BYTES
    ) {
      bytes += this.#sizes[count]! + (count > 0 ? 1 : 0);
      count++;
    }
    const records = this.#queue.splice(0, count);
    for (const size of this.#sizes.splice(0, count)) this.#queuedBytes -= size;
    this.#showDrops();
    this.#inFlight = this.#post(records).then(() => {
      this.#settled += records.length;
      this.#inFlight = undefined;
      // Records that arrived during the post have waited long enough: send them now.
      this.#send();
    });
  }

  /** `records` are ReceiverReports as JSON: the body is a ReportBatch. */
  async #post(records: readonly string[]): Promise<void> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.#target.token !== undefined) headers[DEV_TOKEN_HEADER] = this.#target.token;
    try {
      const response = await fetch(this.#target.url, {
        method: 'POST',
        headers,
        body: `{"records":[${records.join(',')}]}`,
        // Reports carry stacks and the token: they go to the address given, never where an answer points.
        redirect: 'manual',
        signal: AbortSignal.timeout(POST_TIMEOUT_MS),
      });
      const text = await response.text();
      if (response.status >= 300 && response.status < 400)
        this.#failed(
          `HTTP ${response.status}, a redirect, not followed: reports go to the address given only`,
        );
      else if (!response.ok) this.#failed(`HTTP ${response.status}${refusal(text)}`);
    } catch (cause) {
      this.#failed(reason(cause));
    }
  }

  async #flush(): Promise<void> {
    const goal = this.#taken;
    while (this.#settled < goal) {
      if (this.#inFlight) await this.#inFlight;
      else if (this.#queue.length > 0) this.#send();
      else break;
    }
  }

  #showDrops(): void {
    if (this.#dropped === 0 || this.#dropsShown) return;
    this.#dropsShown = true;
    console.warn(
      `${PREFIX} ${this.#dropped} record(s) were dropped: more than maxQueued (${this.#bounds.records}) records or maxQueuedBytes (${this.#bounds.bytes}) bytes waited for the dashboard at ${this.#target.shown}. Further drops are not shown.`,
    );
  }

  #failed(why: string): void {
    if (this.#failureShown) return;
    this.#failureShown = true;
    console.warn(
      `${PREFIX} could not reach the dashboard at ${this.#target.shown}: ${why}; further failures are not shown`,
    );
  }
}

/** The bytes of `text` in UTF-8 (JSON.stringify leaves no lone surrogate: each half of a pair is 2). */
function utf8Bytes(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0x80) bytes += code < 0x800 || (code >= 0xd800 && code <= 0xdfff) ? 1 : 2;
  }
  return bytes;
}

/** The dashboard's `{error:{code,message}}`, when it sent one. */
function refusal(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } } | null;
    const error = body?.error;
    if (error && typeof error === 'object') {
      const code = typeof error.code === 'string' ? ` ${error.code}` : '';
      const message = typeof error.message === 'string' ? `: ${error.message}` : '';
      return `${code}${message}`;
    }
  } catch {
    // Not JSON: the status says enough.
  }
  return '';
}

/** Why fetch failed: undici hides the socket's error (ECONNREFUSED…) in `cause`. */
function reason(cause: unknown): string {
  if (cause instanceof Error) {
    if (cause.name === 'TimeoutError') return `no answer within ${POST_TIMEOUT_MS} ms`;
    const inner = cause.cause;
    if (inner instanceof Error) {
      const code = (inner as { code?: unknown }).code;
      return typeof code === 'string' ? `${code} (${inner.message})` : inner.message;
    }
    return cause.message;
  }
  return String(cause);
}

function toReport(level: Level, record: DeliveryRecord, message: string | undefined): ReceiverReport {
  const err = record.err ?? record.error;
  return {
    eventId: optionalString(record.eventId),
    eventType: optionalString(record.eventType),
    outcome: record.outcome,
    status: record.status,
    code: optionalString(record.code),
    durationMs: record.durationMs,
    secretIndex: typeof record.secretIndex === 'number' ? record.secretIndex : undefined,
    error: err === undefined ? undefined : flattenError(err, 0),
    late: record.late === true,
    level,
    message: cut(optionalString(message), MAX_REPORTED_MESSAGE_CHARS),
    at: new Date().toISOString(),
    pid: process.pid,
    handlers: Array.isArray(record.handlers)
      ? record.handlers.map((step) => ({
          index: step.index,
          name: cut(step.name, MAX_NAME_CHARS) ?? 'anonymous',
          outcome: step.outcome,
          durationMs: step.durationMs,
        }))
      : undefined,
    inboxRun:
      record.inboxRun === undefined
        ? undefined
        : { attempt: record.inboxRun.attempt, replayId: optionalString(record.inboxRun.replayId) },
  };
}

function optionalString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** An error (or anything thrown) as plain JSON, with its cause chain three deep at most. */
function flattenError(value: unknown, depth: number): ReportedError {
  if (typeof value === 'object' && value !== null) {
    const error = value as { name?: unknown; code?: unknown; message?: unknown; stack?: unknown };
    const cause = 'cause' in value ? (value as { cause?: unknown }).cause : undefined;
    const message = typeof error.message === 'string' ? error.message : safeString(value);
    return {
      name: cut(
        typeof error.name === 'string' ? error.name : (value.constructor?.name ?? 'Object') || 'Object',
        MAX_NAME_CHARS,
      ),
      code: cut(typeof error.code === 'string' ? error.code : undefined, MAX_NAME_CHARS),
      message: cut(message, MAX_REPORTED_MESSAGE_CHARS),
      stack: typeof error.stack === 'string' ? cutStack(error.stack, message) : undefined,
      cause: cause === undefined || depth >= MAX_CAUSE_DEPTH ? undefined : flattenError(cause, depth + 1),
    };
  }
  return {
    name: typeof value,
    code: undefined,
    message: cut(safeString(value), MAX_REPORTED_MESSAGE_CHARS),
    stack: undefined,
    cause: undefined,
  };
}

/**
 * `text` cut to `max` characters (never between the two halves of a surrogate pair), with a marker that
 * says how much more there was: a report carries what a developer reads, not a 100 KB message.
 */
function cut<Text extends string | undefined>(text: Text, max: number): Text {
  if (text === undefined || text.length <= max) return text;
  const end = isHighSurrogate(text.charCodeAt(max - 1)) ? max - 1 : max;
  return `${text.slice(0, end)}… [truncated: ${text.length - end} more characters]` as Text;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** A stack begins with the message: a long one is cut there as the message is, so the frames stay. */
function cutStack(stack: string, message: string): string {
  const at = message.length > MAX_REPORTED_MESSAGE_CHARS ? stack.indexOf(message) : -1;
  const shortened =
    at === -1
      ? stack
      : `${stack.slice(0, at)}${cut(message, MAX_REPORTED_MESSAGE_CHARS)}${stack.slice(at + message.length)}`;
  return cut(shortened, MAX_REPORTED_STACK_CHARS);
}

function safeString(value: unknown): string {
  try {
    return typeof value === 'object' ? JSON.stringify(value) : String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}
