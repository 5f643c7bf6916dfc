/**
 * The seam between the inbox worker (`worker.ts`, the policy) and a queue engine (the mechanics): what
 * an engine must do so that one worker runs its events. BullMQ, pg-boss and SQS are transports; the
 * next engine is one more.
 */
import type { InboxEntry, InboxStats, ProcessResult, ThrottleReason } from 'service-webhooks/core';

/**
 * Why a delivery is deferred: its claim held by another run, or a flow-control reason.
 *
 * @example
 * ```ts
 * const throttled = (reason: DeferReason) => reason !== 'held';
 * ```
 */
export type DeferReason = 'held' | ThrottleReason;

/**
 * One event as the engine handed it out: the entry, which attempt this is, and how to name it in logs.
 * A transport extends it with what its operations need (a job, a receipt handle).
 *
 * @example
 * ```ts
 * const delivery: InboxDelivery = { entry: JSON.parse(message.body), attempt: 1, ids: { messageId: message.id } };
 * ```
 */
export interface InboxDelivery {
  /** The door's entry, as stored (`webhooks.process` checks its seal and shape). */
  readonly entry: InboxEntry | undefined;
  /** The attempt this run is, from 1; deferrals and crashes do not count. */
  readonly attempt: number;
  /** A replay's id (`ProcessOptions.replayId`), when this delivery is a dead letter replayed. */
  readonly replayId?: string | undefined;
  /** The engine's abort signal for the run (`ctx.signal`), when it has one. */
  readonly signal?: AbortSignal | undefined;
  /** What names the delivery on every log line (`{ jobId }`, `{ messageId }`). */
  readonly ids: Readonly<Record<string, unknown>>;
  /** The name of an entry that holds no event id: `(job 7)`. */
  readonly unnamed: string;
  /**
   * Times the engine found this event abandoned by a worker that stopped, when it counts them itself
   * in the delivery (pg-boss); an engine that enforces its own limit (BullMQ) leaves it out.
   */
  readonly crashes?: number;
  /** Whether this delivery is such a recovery (a warning is logged before it runs). */
  readonly recovered?: boolean;
}

/**
 * Why a delivery is dead-lettered: a poison entry, its last attempt failed, or it crashed too many workers.
 *
 * @example
 * ```ts
 * const reason: DeadLetterReason = failure.reason; // 'poison' | 'last-attempt' | 'crashed'
 * ```
 */
export type DeadLetterReason = 'poison' | 'last-attempt' | 'crashed';

/**
 * Copies handed out before their time, as an engine sees them. The rule is the worker's, one for every
 * engine: a copy due within `holdBackFromMs` waits in the worker (its lease held, unless a forced close
 * abandons it) and then runs; one due later is given back to the engine with `holdBack`, the same
 * attempt, nothing spent. `holdBackFromMs` is the shortest delay the engine can hold a copy for (SQS
 * counts visibility in whole seconds).
 *
 * @example
 * ```ts
 * const earlyCopies: EarlyCopies<MyDelivery> = {
 *   notBefore: (delivery) => delivery.meta.notBefore,
 *   holdBackFromMs: 1_000,
 *   holdBack: (delivery, earlyMs) => queue.hide(delivery.id, earlyMs),
 * };
 * ```
 */
export interface EarlyCopies<D extends InboxDelivery> {
  /** When the copy may run (Unix ms), or `undefined` when it may run now. */
  notBefore(delivery: D): number | undefined;
  /** How early a copy must be to be given back rather than waited for. */
  readonly holdBackFromMs: number;
  /** Give the copy back to the engine until `earlyMs` from now; a rejection is logged and the copy comes back by the engine's own means. */
  holdBack(delivery: D, earlyMs: number): Promise<void>;
}

/**
 * What an engine does for the inbox worker: only mechanics. The worker decides what happens (done,
 * deferred, retried, dead-lettered), logs it, reports dead letters to `onError` and telemetry, runs
 * the monitor and closes gracefully; the transport carries each decision out on its queue. Every
 * operation that settles a delivery (`acknowledge`, `defer`, `retry`, `deadLetter`) ends it: the
 * original is removed once what replaces it is written (in that order, so a crash between leaves a
 * duplicate the store recognises, never a loss). A rejection leaves the delivery to come back by the
 * engine's own means (a lease that ends), and the worker logs it.
 *
 * Pull engines (SQS, pg-boss) give `receive`, and the worker runs the loop; push engines (BullMQ) call
 * the worker's `run` from their own processor and leave `receive` out.
 *
 * @example
 * ```ts
 * const transport: InboxTransport<MyDelivery> = {
 *   name: 'webhooks',
 *   redelivery: 'the queue hands the event out again after its lease',
 *   async receive(max) { return (await queue.take(max)).map(deliveryOf); },
 *   extend: (delivery) => { const timer = setInterval(() => queue.touch(delivery.id), 10_000); return () => clearInterval(timer); },
 *   acknowledge: (delivery) => queue.ack(delivery.id),
 *   defer: (delivery, delayMs) => queue.release(delivery.id, delayMs),
 *   retry: (delivery, next) => queue.requeue(delivery.id, next.attempt, next.delayMs),
 *   deadLetter: (delivery, failure) => queue.bury(delivery.id, failure.message),
 *   stats: () => queue.figures(),
 * };
 * const worker = new InboxWorkerCore(webhooks, transport, settings, logger);
 * ```
 */
export interface InboxTransport<D extends InboxDelivery = InboxDelivery> {
  /** The queue's name: on every log line, the monitor's and the telemetry gauges'. */
  readonly name: string;
  /** How a delivery whose settling failed comes back, said in the warning: `pg-boss will hand the event out again`. */
  readonly redelivery: string;
  /** What the warning says when `receive` fails (at most once a minute). */
  readonly receiveTrouble?: string;
  /** How long to wait after `receive` failed before the next one. @default 1_000 */
  readonly receiveRetryMs?: number;
  /** How long to sleep when `receive` found fewer than asked (0 for a long poll). @default 0 */
  readonly idleMs?: number;
  /**
   * Whether a retry writes the next attempt into the entry's copy (SQS, pg-boss): the worker then
   * seals that attempt (`webhooks.sealAttempt`) and passes the seal to `retry`. An engine that counts
   * attempts in its own state (BullMQ) needs no seal.
   */
  readonly attemptTravels: boolean;
  /** Resolves once the transport can receive; a rejection stops the worker from starting (logged). */
  readonly ready?: Promise<void> | undefined;
  /** Up to `max` deliveries, waiting for some at most as long as the engine's poll; `signal` ends a wait at close. */
  receive?(max: number, signal: AbortSignal): Promise<readonly D[]>;
  /**
   * For an engine whose copies can reach a worker before their time (a retry's or a deferral's copy
   * that carries its due time): how to read that time and give such a copy back. The worker decides.
   */
  readonly earlyCopies?: EarlyCopies<D>;
  /** Keep the delivery leased while its handlers run; returns what stops it. */
  extend?(delivery: D): () => void;
  /** The run is done (handled, or a duplicate): remove the delivery. */
  acknowledge(delivery: D, result: ProcessResult): Promise<void>;
  /**
   * Run this delivery again after `delayMs`, spending no attempt: another run holds the event's claim
   * (`held`), or flow control held it back (`rate`, `key`, `unavailable`: the worker's limits, or
   * their shared state out of reach; `downstream`: a handler's `RateLimitedError`). An engine that can
   * count the throttled entries for `stats()` records `reason`; one that cannot ignores it.
   */
  defer(delivery: D, delayMs: number, reason?: DeferReason): Promise<void>;
  /** Write attempt `next.attempt` due after `next.delayMs`, then remove this delivery. */
  retry(
    delivery: D,
    next: {
      readonly attempt: number;
      readonly delayMs: number;
      readonly attemptSeal: string | undefined;
      readonly error: unknown;
    },
  ): Promise<void>;
  /** Write the dead letter with its cause (`message`, `stack`), then remove this delivery. */
  deadLetter(delivery: D, failure: DeadLetter): Promise<void>;
  /** The inbox's figures now. */
  stats(): Promise<InboxStats>;
  /**
   * Stop taking events and release what the transport opened. `settled` resolves once the running
   * handlers have (at once when `force`); a push engine stops taking events at once and waits for it.
   */
  close?(force: boolean, settled: Promise<unknown>): Promise<void>;
}

/**
 * A dead letter as the worker hands it to the transport.
 *
 * @example
 * ```ts
 * async deadLetter(delivery, failure: DeadLetter) {
 *   await queue.bury(delivery.id, { reason: failure.reason, lastError: failure.message, stack: failure.stack });
 * }
 * ```
 */
export interface DeadLetter {
  readonly reason: DeadLetterReason;
  /** The attempt that failed last. */
  readonly attempt: number;
  readonly error: unknown;
  /** `code: what happened` ({@link describeFailure}). */
  readonly message: string;
  readonly stack: string | undefined;
  /** When the run that failed started (Unix ms). */
  readonly startedAt: number;
}
