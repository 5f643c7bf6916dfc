/**
 * The inbox's policy for one delivery, whatever the engine: run it through `webhooks.process` under
 * its lease, judge a failure (`judgeFailure`), have the transport carry the verdict out, and say what
 * happened: the log line, and for a dead letter the telemetry count and `EventDeadLetteredError` to
 * `onError`. The long-running worker (`worker.ts`) and the SQS Lambda handler both run deliveries here.
 */
import {
  EventDeadLetteredError,
  type InboxLogger,
  type InboxLogRecord,
  type ProcessOptions,
  type ProcessResult,
  ResourceBusyError,
  type WebhookEvent,
  type Webhooks,
} from 'service-webhooks/core';
import { describeFailure, judgeFailure } from './attempt-outcome.js';
import type { Schedule } from './backoff.js';
import { FlowGate, type FlowSettings } from './flow-gate.js';
import { failureFields, inboxLog } from './log.js';
import type { DeadLetterReason, DeferReason, InboxDelivery, InboxTransport } from './transport.js';
import { waitUnlessAbandoned } from './wait-unless-abandoned.js';

/**
 * What the runner needs, checked by the engine's worker at its start.
 *
 * @example
 * ```ts
 * const settings: RunnerSettings = { attempts: 25, retries: schedule(undefined, WHAT), handlerTimeoutMs: undefined, acceptUnsealedEntries: false };
 * ```
 */
export interface RunnerSettings {
  readonly attempts: number;
  readonly retries: Schedule;
  readonly handlerTimeoutMs: number | undefined;
  /** Run entries without a seal (`acceptUnsealedEntries`, during an upgrade). */
  readonly acceptUnsealedEntries: boolean;
  /** Recoveries of a crashed run allowed before a dead letter, for a transport that counts `crashes`. */
  readonly maxCrashes?: number;
  /** The worker's flow control (`rate`, `concurrencyPerKey`), when it has any. */
  readonly flow?: FlowSettings | undefined;
}

/**
 * How one run ended, for the caller: `kept` when the delivery stays on the queue as it was and comes
 * back by the engine's own means (a deferral by visibility, a copy not yet due, a settling that failed:
 * what a Lambda handler lists as a batch item failure); `abandoned` when a forced close left it.
 *
 * @example
 * ```ts
 * const end = await runner.run(delivery);
 * const comesBack = end.kind === 'deferred' || end.kind === 'not-due' || end.kind === 'unsettled';
 * ```
 */
export type RunEnd =
  | { readonly kind: 'done'; readonly result: ProcessResult }
  | { readonly kind: 'deferred' | 'retried' | 'dead-lettered' | 'not-due' | 'abandoned' }
  | { readonly kind: 'unsettled'; readonly error: unknown };

type Level = 'info' | 'warn' | 'error';

/**
 * Runs deliveries of one transport with one policy.
 *
 * @example
 * ```ts
 * const runner = new InboxRunner(webhooks, transport, { attempts: 25, retries: schedule(undefined, 'mine'), handlerTimeoutMs: undefined, acceptUnsealedEntries: false }, logger);
 * const end = await runner.run(delivery);
 * ```
 */
export class InboxRunner<D extends InboxDelivery> {
  readonly #webhooks: Webhooks;
  readonly #transport: InboxTransport<D>;
  readonly #settings: RunnerSettings;
  readonly #logger: InboxLogger | undefined;
  readonly #flow: FlowGate | undefined;

  constructor(
    webhooks: Webhooks,
    transport: InboxTransport<D>,
    settings: RunnerSettings,
    logger: InboxLogger | undefined,
  ) {
    this.#webhooks = webhooks;
    this.#transport = transport;
    this.#settings = settings;
    this.#logger = logger;
    this.#flow =
      settings.flow && new FlowGate(settings.flow, (record, message) => this.#log('warn', record, message));
  }

  /** One run of `delivery`; `abandon` aborts when a forced close leaves the runs to the engine. */
  async run(delivery: D, abandon?: AbortSignal): Promise<RunEnd> {
    const { maxCrashes } = this.#settings;
    const { crashes } = delivery;
    if (delivery.recovered)
      this.abandonedRunAgain(delivery.ids, { eventId: this.#eventId(delivery), crashes });
    if (crashes !== undefined && maxCrashes !== undefined && crashes > maxCrashes) {
      const error = new Error(
        `the event was abandoned by ${crashes} workers that stopped while running it (crash, out of memory?)`,
      );
      return this.#deadLetter(delivery, 'crashed', error, Date.now());
    }
    const stopLease = this.#transport.extend?.(delivery);
    const onAbandon = (): void => stopLease?.();
    abandon?.addEventListener('abort', onAbandon, { once: true });
    try {
      const due = await this.#due(delivery, abandon);
      if (due !== true) return due;
      let admitted: (() => void) | undefined;
      if (this.#flow) {
        const admission = await this.#flow.admit(delivery.entry, abandon);
        if (admission.kind === 'defer') {
          stopLease?.();
          if (abandon?.aborted) return { kind: 'abandoned' };
          return await this.#defer(delivery, admission.delayMs, admission.reason);
        }
        admitted = admission.done;
      }
      const startedAt = Date.now();
      let result: ProcessResult | undefined;
      let failure: unknown;
      try {
        result = await this.#webhooks.process(delivery.entry as never, this.#processOptions(delivery));
      } catch (error) {
        failure = error;
      } finally {
        admitted?.();
      }
      // Stopped before anything else touches the delivery: a renewal must not undo a deferral.
      stopLease?.();
      // A forced close: the delivery is left as it is, to come back as after a crash.
      if (abandon?.aborted) return { kind: 'abandoned' };
      if (result !== undefined)
        return await this.#settle(delivery, 'done', () => this.#transport.acknowledge(delivery, result), {
          kind: 'done',
          result,
        });
      return await this.#judge(delivery, failure, startedAt);
    } finally {
      stopLease?.();
      abandon?.removeEventListener('abort', onAbandon);
    }
  }

  #processOptions(delivery: D): ProcessOptions {
    const { handlerTimeoutMs, acceptUnsealedEntries } = this.#settings;
    const run: { -readonly [K in keyof ProcessOptions]: ProcessOptions[K] } = { attempt: delivery.attempt };
    if (delivery.signal) run.signal = delivery.signal;
    if (handlerTimeoutMs !== undefined) run.handlerTimeoutMs = handlerTimeoutMs;
    if (delivery.replayId) run.replayId = delivery.replayId;
    if (acceptUnsealedEntries) run.acceptUnsealed = true;
    return run;
  }

  async #judge(delivery: D, failure: unknown, startedAt: number): Promise<RunEnd> {
    const { attempts, retries } = this.#settings;
    const { attempt } = delivery;
    const verdict = judgeFailure(failure, attempt, attempts, retries);
    switch (verdict.kind) {
      case 'defer':
        return this.#defer(delivery, verdict.delayMs, verdict.reason, failure instanceof ResourceBusyError);
      case 'retry': {
        const next = attempt + 1;
        const { delayMs, error } = verdict;
        const end = await this.#settle(
          delivery,
          'retry',
          async () => {
            // The next attempt is sealed by the receiver, bound to the door's seal the entry carries.
            const attemptSeal = this.#transport.attemptTravels
              ? (await this.#webhooks.sealAttempt(delivery.entry as never, next)).attemptSeal
              : undefined;
            await this.#transport.retry(delivery, { attempt: next, delayMs, attemptSeal, error });
          },
          { kind: 'retried' },
        );
        if (end.kind === 'retried') this.attemptFailed(delivery, error, delayMs);
        return end;
      }
      case 'dead-letter':
        return this.#deadLetter(delivery, verdict.reason, verdict.error, startedAt);
    }
  }

  /**
   * Run the delivery again after `delayMs`, spending no attempt. A throttle is counted in telemetry
   * (by queue and reason, never by entry); a downstream's 429 and a held claim are also logged, the
   * worker's own limits are not (a backlog under a rate would log every entry, every period).
   */
  async #defer(delivery: D, delayMs: number, reason: DeferReason, resourceBusy = false): Promise<RunEnd> {
    const end = await this.#settle(
      delivery,
      'defer',
      () => this.#transport.defer(delivery, delayMs, reason),
      {
        kind: 'deferred',
      },
    );
    if (end.kind !== 'deferred') return end;
    if (reason !== 'held') this.#webhooks.telemetry?.throttled?.(this.#transport.name, reason);
    if (reason === 'held' || reason === 'downstream') {
      this.#log(
        'info',
        { ...delivery.ids, eventId: this.#eventId(delivery), attempt: delivery.attempt, delayMs },
        resourceBusy
          ? 'webhook inbox: another event of the resource is being handled; deferred'
          : reason === 'held'
            ? 'webhook inbox: event held by another worker; deferred'
            : 'webhook inbox: a handler’s downstream is rate limited; deferred without spending an attempt',
      );
    }
    return end;
  }

  /**
   * Whether a copy may run now (the rule of `EarlyCopies`): one due within the engine's finest delay
   * waits here, one due later goes back to the engine. A copy never runs before its time.
   */
  async #due(delivery: D, abandon: AbortSignal | undefined): Promise<true | RunEnd> {
    const early = this.#transport.earlyCopies;
    const notBefore = early?.notBefore(delivery);
    if (early === undefined || notBefore === undefined) return true;
    for (;;) {
      const earlyMs = notBefore - Date.now();
      if (earlyMs <= 0) return true;
      if (earlyMs >= early.holdBackFromMs)
        return this.#settle(delivery, 'hold back', () => early.holdBack(delivery, earlyMs), {
          kind: 'not-due',
        });
      // Asked again after the wait: a timer may fire a millisecond before the wall clock reads its time.
      if (!(await waitUnlessAbandoned(earlyMs, abandon))) return { kind: 'not-due' };
    }
  }

  async #deadLetter(
    delivery: D,
    reason: DeadLetterReason,
    error: unknown,
    startedAt: number,
  ): Promise<RunEnd> {
    const { message, stack } = describeFailure(error);
    const { attempt } = delivery;
    const end = await this.#settle(
      delivery,
      'dead-letter',
      () => this.#transport.deadLetter(delivery, { reason, attempt, error, message, stack, startedAt }),
      { kind: 'dead-lettered' },
    );
    if (end.kind === 'dead-lettered') this.deadLettered(delivery, error, reason);
    return end;
  }

  /** Carry a verdict out; a failure leaves the delivery to come back, said once here. */
  async #settle(
    delivery: D,
    what: 'done' | 'defer' | 'retry' | 'dead-letter' | 'hold back',
    operation: () => Promise<void>,
    end: RunEnd,
  ): Promise<RunEnd> {
    try {
      await operation();
      return end;
    } catch (error) {
      const failed = {
        done: 'could not remove a handled event',
        defer: 'could not defer the event',
        retry: 'could not queue the retry',
        'dead-letter': 'could not dead-letter the event',
        'hold back': 'could not hold back a copy received before its time',
      }[what];
      this.#log(
        what === 'dead-letter' ? 'error' : 'warn',
        { ...delivery.ids, err: error },
        `webhook inbox: ${failed}; ${this.#transport.redelivery}`,
      );
      return { kind: 'unsettled', error };
    }
  }

  /** Say that an attempt failed and the next is due after `delayMs`. */
  attemptFailed(delivery: InboxDelivery, error: unknown, delayMs: number | undefined): void {
    const event = eventOf(delivery);
    this.#log(
      'warn',
      {
        ...delivery.ids,
        eventId: this.#eventId(delivery),
        eventType: typeof event?.type === 'string' ? event.type : undefined,
        attempt: delivery.attempt,
        ...failureFields(error),
        nextAttemptInMs: delayMs,
      },
      'webhook inbox: attempt failed; retrying',
    );
  }

  /**
   * Report a dead letter: the log line, telemetry's count, and `EventDeadLetteredError` to `onError`.
   * Also for one the engine made itself (BullMQ failing a job that stalled too often).
   */
  deadLettered(
    delivery: InboxDelivery,
    error: unknown,
    reason: DeadLetterReason,
    message = 'webhook inbox: event dead-lettered',
  ): void {
    const event = eventOf(delivery);
    const eventId = this.#eventId(delivery);
    const eventType = typeof event?.type === 'string' ? event.type : undefined;
    this.#log(
      'error',
      { ...delivery.ids, eventId, eventType, attempt: delivery.attempt, ...failureFields(error), reason },
      message,
    );
    this.#webhooks.telemetry?.deadLettered(eventType);
    this.#webhooks.report(
      new EventDeadLetteredError(eventId, delivery.attempt, { cause: error }),
      event as WebhookEvent | undefined,
    );
  }

  /** Say that an event a stopped worker left runs again. */
  abandonedRunAgain(ids: Readonly<Record<string, unknown>>, more: Record<string, unknown> = {}): void {
    this.#log(
      'warn',
      { ...ids, ...more },
      'webhook inbox: event abandoned by a worker that stopped (crash, blocked event loop); running it again',
    );
  }

  #eventId(delivery: InboxDelivery): string {
    const event = eventOf(delivery);
    return typeof event?.id === 'string' ? event.id : delivery.unnamed;
  }

  #log(level: Level, record: Record<string, unknown>, message: string): void {
    inboxLog(this.#logger, level, { inbox: this.#transport.name, ...record } as InboxLogRecord, message);
  }
}

function eventOf(delivery: InboxDelivery): Partial<WebhookEvent> | undefined {
  return delivery.entry?.event as Partial<WebhookEvent> | undefined;
}
