import { now } from './clock.js';
import { STATUS_TABLE, type WebhookError } from './errors.js';
import { isThenable } from './eventual.js';
import { speaksForItself } from './keeps-stderr.js';
import type { DeliveryTelemetry } from './telemetry.js';
import type { DeliveryOutcome, DeliveryRecord, ErrorListener, WebhookEvent, WebhookLogger } from './types.js';

/** What the log record of one delivery (or inbox run) is made of. */
export interface LogContext {
  /** When the delivery arrived (the core's clock, `now()`), for the log; 0 without a logger. */
  readonly started: number;
  readonly event?: WebhookEvent | undefined;
  /** The id as verified (a handler may change `event.id`). */
  readonly eventId?: string | undefined;
  readonly secretIndex?: number | undefined;
  /** Set once the sender was answered 503 `handler_timeout` while the handlers still ran. */
  readonly late?: boolean;
  /** The delivery's record for the `telemetry` plug-in, which joins the log record to its trace. */
  readonly telemetry?: DeliveryTelemetry | undefined;
  /** Set on a run of a type the `ordering` option guards whose event names no resource (not guarded). */
  readonly unordered?: boolean;
}

/**
 * The receiver's observers: the `onError` listeners and the logger. Neither may change an answer nor
 * crash the process: what they throw or reject is caught and said once on stderr, since an observer
 * that failed cannot be trusted to say it.
 */
export class Observers {
  readonly logger: WebhookLogger | undefined;
  /**
   * The logger shows failures, so stderr need not. False without a logger, and with one that only looks
   * on (`KEEPS_STDERR`, devReporter's): what stderr says must not depend on a dev tool left in.
   */
  readonly loggerSpeaks: boolean;
  readonly #listeners: ErrorListener[] = [];
  #failureShown = false;

  constructor(logger: WebhookLogger | undefined) {
    this.logger = logger;
    this.loggerSpeaks = speaksForItself(logger);
  }

  listen(listener: ErrorListener): void {
    if (typeof listener !== 'function') throw new TypeError('onError needs a function.');
    this.#listeners.push(listener);
  }

  report(error: WebhookError, event: WebhookEvent | undefined): void {
    if (this.#listeners.length === 0) {
      // Failures must never vanish: with no listener and no logger that shows them, say it on stderr.
      if (!this.loggerSpeaks)
        console.error(
          `[service-webhooks] ${error.name} (${error.code}): ${error.message}`,
          error.cause ?? '',
        );
      return;
    }
    for (const listener of this.#listeners) {
      try {
        this.#watch(listener(error, event));
      } catch (cause) {
        this.#failed(cause);
      }
    }
  }

  /**
   * A failure a store or an inbox engine found between calls. With no `onError` listener it is said on
   * stderr even when there is a logger: the logger takes delivery records, and this belongs to none.
   * Only the cause's stack is printed: a driver's error can carry its whole connection object.
   */
  reportInBackground(error: WebhookError): void {
    if (this.#listeners.length > 0) {
      this.report(error, undefined);
      return;
    }
    const { cause } = error;
    console.error(
      `[service-webhooks] ${error.name} (${error.code}): ${error.message}`,
      cause instanceof Error ? (cause.stack ?? cause.message) : (cause ?? ''),
    );
  }

  /** One record per answer; a late record repeats what the sender was told, not an answer never sent. */
  log(
    context: LogContext,
    outcome: DeliveryOutcome,
    status: number,
    code: string | undefined,
    error: WebhookError | undefined,
  ): void {
    const logger = this.logger;
    if (!logger) return;
    const { started, event, late } = context;
    const record: { -readonly [K in keyof DeliveryRecord]: DeliveryRecord[K] } = {
      eventId: context.eventId ?? event?.id,
      eventType: event?.type,
      outcome,
      status: late ? STATUS_TABLE.handler_timeout.status : status,
      code: late ? 'handler_timeout' : code,
      durationMs: started === 0 ? 0 : Math.round((now() - started) * 1000) / 1000,
      secretIndex: context.secretIndex,
    };
    if (error) {
      // `err` is the key pino's and bunyan's error serializer reads (message, stack, code, cause);
      // `error` stays for code that read it, hidden from loggers so the failure is printed once.
      record.err = error;
      Object.defineProperty(record, 'error', { value: error, enumerable: false });
    }
    if (late) record.late = true;
    if (context.unordered === true) record.unordered = true;
    const traced = context.telemetry?.logFields();
    if (traced) {
      record.trace_id = traced.trace_id;
      record.span_id = traced.span_id;
    }
    try {
      if (late) {
        this.#watch(
          outcome === 'failed'
            ? logger.error(record, 'webhook handlers failed after the delivery was answered')
            : logger.warn(record, 'webhook handlers finished after the delivery was answered'),
        );
      } else if (outcome === 'failed') this.#watch(logger.error(record, 'webhook delivery failed'));
      else if (outcome === 'rejected') this.#watch(logger.warn(record, 'webhook delivery rejected'));
      else this.#watch(logger.info(record, 'webhook delivery'));
    } catch (cause) {
      this.#failed(cause);
    }
  }

  #watch(result: unknown): void {
    if (isThenable(result)) result.then(undefined, (cause: unknown) => this.#failed(cause));
  }

  #failed(cause: unknown): void {
    if (this.#failureShown) return;
    this.#failureShown = true;
    console.error(
      '[service-webhooks] An onError listener or the logger threw or rejected; the delivery was answered as usual. Further observer failures are not shown.',
      cause,
    );
  }
}
