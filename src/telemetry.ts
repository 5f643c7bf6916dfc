import type { DeliveryOutcome } from './delivery-outcome.js';
import type { WebhookError } from './errors.js';
import type { Eventual } from './eventual.js';
import type { HandlerStep } from './handler-step.js';
import type { ThrottleReason } from './throttle-reason.js';

/**
 * What the receiver tells a telemetry plug-in about its deliveries: the seam that
 * `service-webhooks/opentelemetry` plugs into. The core knows no tracing library; without the
 * `telemetry` option it makes none of these calls, so a receiver that does not ask for telemetry pays
 * nothing for it.
 *
 * A delivery's record starts in the context the delivery arrived in, and the core runs the rest of
 * the delivery inside {@link DeliveryTelemetry.within}, so a plug-in that keeps a context
 * (OpenTelemetry's AsyncLocalStorage) sees the delivery as a child of the HTTP request and the
 * handlers' work as its children. A plug-in must not throw: the core does not guard its calls, as it does not guard a store's
 * synchronous code.
 *
 * @example
 * ```ts
 * import { createWebhooks } from 'service-webhooks';
 * import { openTelemetry } from 'service-webhooks/opentelemetry';
 *
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, telemetry: openTelemetry() });
 * ```
 */
export interface WebhookTelemetry {
  /**
   * A delivery reached the receiver (or an adapter refused it before `handle()`): its record starts
   * now. `undefined` when nothing would keep it (no SDK registered, or the span not sampled and no
   * meter): the delivery then runs as it would without the option.
   */
  startDelivery(): DeliveryTelemetry | undefined;
  /**
   * A worker's run of an inbox entry starts. `traceparent` is what the door wrote into the entry
   * ({@link InboxRunStart}); the event was verified at the door, and the core says so at once.
   */
  startInboxRun(start: InboxRunStart): DeliveryTelemetry | undefined;
  /** An inbox engine gave up on an entry after its last attempt and kept it as a dead letter. */
  deadLettered(eventType: string | undefined): void;
  /**
   * An inbox worker held an entry back (deferred it without spending an attempt): its `rate`, its
   * `concurrencyPerKey`, a handler's `RateLimitedError` (`downstream`), or the flow-control state out
   * of reach (`unavailable`). Optional, so that a plug-in written before it still fits.
   */
  throttled?(queue: string, reason: ThrottleReason): void;
  /**
   * An inbox engine's gauges, read when the plug-in collects (not on a timer of the engine's own).
   * Answers the function that stops observing, for the engine's `close()`.
   */
  observeInbox(read: () => Promise<InboxGauges>): () => void;
}

/**
 * How a worker's run of an inbox entry begins, as {@link WebhookTelemetry.startInboxRun} is told.
 *
 * @example
 * ```ts
 * const run = telemetry.startInboxRun({ traceparent: entry.traceparent, attempt: 2, replayId: undefined });
 * ```
 */
export interface InboxRunStart {
  /** The W3C `traceparent` the door wrote into the entry, if it wrote one. */
  readonly traceparent: string | undefined;
  /** This run's attempt, from 1. */
  readonly attempt: number;
  /** Set when an operator replays a dead letter: the run starts a trace of its own, linked to the door's. */
  readonly replayId: string | undefined;
}

/**
 * What an inbox engine reports of its queue when the plug-in collects.
 *
 * @example
 * ```ts
 * const stop = webhooks.telemetry?.observeInbox(async () => ({ queue: 'webhooks', depth: 3, oldestAgeSeconds: 1.5, deadLetters: 0 }));
 * ```
 */
export interface InboxGauges {
  /** The queue's name, so that the gauges of two queues stay apart. */
  readonly queue: string;
  /** Entries waiting or being run. */
  readonly depth: number;
  /** How long the oldest waiting entry has waited, in seconds (0 when none waits). */
  readonly oldestAgeSeconds: number;
  /** Entries kept as dead letters. */
  readonly deadLetters: number;
}

/**
 * A step of a delivery that waits on something outside the process, made visible in its trace.
 *
 * @example
 * ```ts
 * const step: TelemetryStep = 'store.claim';
 * ```
 */
export type TelemetryStep = 'store.claim' | 'store.complete' | 'store.release' | 'inbox.enqueue';

/**
 * The record of one delivery (or one worker's run) as the core makes it: what a plug-in returns from
 * `startDelivery`, called by the core in this order.
 *
 * @example
 * ```ts
 * const delivery = telemetry.startDelivery();
 * delivery?.within(() => {
 *   delivery.verified(event.id, event.type, 0);
 *   delivery.end({ outcome: 'handled', status: 200, code: undefined, error: undefined, late: false });
 * });
 * ```
 */
export interface DeliveryTelemetry {
  /** The signature held: from here on the event's id and type may be recorded (never before). */
  verified(eventId: string, eventType: string, secretIndex: number): void;
  /**
   * Optional. With the `tenant` option, the tenant whose secret verified the delivery, said right
   * after `verified`: for the span only. A tenant id is unbounded, so it never becomes a metric
   * attribute; a delivery for an unknown tenant is counted by its answer (`unknown_tenant`) alone.
   */
  tenant?(tenant: string): void;
  /**
   * Run `work` inside the delivery's context: the core runs the whole delivery (or worker's run)
   * through it, so what a store driver or a handler traces or logs is the delivery's.
   */
  within<T>(work: () => T): T;
  /**
   * A step that waits on something outside the process, run as a visible part of the delivery: a
   * store's call (not the memory store's, which answers at once) or the inbox write.
   */
  step<T>(name: TelemetryStep, call: () => Eventual<T>): Eventual<T>;
  /** The handlers start; {@link DeliveryTelemetry.workSettled} follows once they settle. */
  handlersStarted(): void;
  /**
   * One handler settled, in the order they run: which one, how it ended, how long it took. Optional: a
   * plug-in without it is not asked, and the core then times no handler for it.
   */
  handlerSettled?(step: HandlerStep): void;
  /**
   * The run's work settled (`succeeded`, `failed` or `timed_out`): its handlers, or at an inbox's
   * door its write, which has no `handlersStarted` before it.
   */
  workSettled(kind: 'succeeded' | 'failed' | 'timed_out'): void;
  /** Another attempt took the event over while the work ran (the lease was lost). */
  leaseLost(): void;
  /** The delivery's W3C `traceparent`, which the inbox door writes into the entry. */
  traceparent(): string | undefined;
  /** What a log record of this delivery carries to join it to the trace (`trace_id`, `span_id`). */
  logFields(): { readonly trace_id: string; readonly span_id: string } | undefined;
  /**
   * The sender's answer, or a worker run's ending. An answer of `handler_timeout` goes out while the
   * handlers still run: the record stays open until they end, which is said again with `late` set.
   */
  end(answer: DeliveryAnswer): void;
}

/**
 * An answer as {@link DeliveryTelemetry.end} is told it: the same fields the log record has.
 *
 * @example
 * ```ts
 * const answer: DeliveryAnswer = { outcome: 'rejected', status: 401, code: 'invalid_signature', error: undefined, late: false };
 * ```
 */
export interface DeliveryAnswer {
  readonly outcome: DeliveryOutcome;
  readonly status: number;
  /** The status table's code on a refusal or a failure. */
  readonly code: string | undefined;
  /** What failed, on a 5xx. The handler's own error is its `cause`. */
  readonly error: WebhookError | undefined;
  /** The handlers ended after the sender was answered `handler_timeout`. */
  readonly late: boolean;
}
