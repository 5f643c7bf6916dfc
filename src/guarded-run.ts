import { nextClaimToken } from './claim-token.js';
import { now } from './clock.js';
import type { Accepted } from './delivery-verifier.js';
import {
  EventInProgressError,
  LeaseLostError,
  ResourceBusyError,
  StoreUnavailableError,
  type WebhookError,
} from './errors.js';
import { chain, type Eventual } from './eventual.js';
import type { Observers } from './observers.js';
import type { HandlerOutcome } from './run-handlers.js';
import type { DedupKey, RunClaim, RunStore } from './scoped-store.js';
import { SENDER_RETRY_SPAN_MS } from './sender-schedule.js';
import type { DeliveryTelemetry } from './telemetry.js';
import { type PendingTimeout, TimeoutQueue } from './timeout-queue.js';
import type { CompleteResult, WebhookEvent, WebhookHandler } from './types.js';

/** How a guarded run answers: a success of its own kind, a duplicate, or an error of the status table. */
export interface Ending {
  readonly code: 'handled' | 'queued' | 'duplicate' | 'stale' | WebhookError['code'];
  readonly error?: WebhookError;
}

export const HANDLED: Ending = Object.freeze({ code: 'handled' });
export const QUEUED: Ending = Object.freeze({ code: 'queued' });
export const DUPLICATE: Ending = Object.freeze({ code: 'duplicate' });
export const STALE: Ending = Object.freeze({ code: 'stale' });

const failedWith = (error: WebhookError): Ending => ({ code: error.code, error });

/**
 * Hands the work's outcome back to the run: the work calls it, synchronously or once it has an
 * outcome, and returns what it returns. Passed rather than chained, so that no promise is spent
 * between the work and the completion of its claim.
 */
export type Settle<A> = (run: Run<A>, outcome: HandlerOutcome) => Eventual<A>;

/** What one run does once it holds the claim: run handlers, or write to an inbox. */
export type Work<A> = (run: Run<A>, settle: Settle<A>) => Eventual<A>;

/**
 * How a run's answer is made from its ending; called once per ending. After an early answer (the
 * handlers ran out of time) `run.late` is set, and the ending of the work is only logged.
 */
export type Finish<A> = (run: Run<A>, ending: Ending) => A;

/**
 * What runs of one kind share, made once per receiver: the request's handler runs, the inbox door's
 * writes, a worker's runs. Kept apart from the run so that a run, made per delivery, stays small.
 */
export interface RunKind<A> {
  /** The engine that runs them, and the receiver whose runs they are (see {@link ExactlyOnce}). */
  readonly engine: ExactlyOnce;
  readonly owner: object;
  readonly work: Work<A>;
  readonly finish: Finish<A>;
  /** What a success answers: `handled`, or `queued` at an inbox's door. */
  readonly success: Ending;
  /** Inbox runs are keyed apart from the door (see `ScopedStore.runKeyFor`) and never fail open. */
  readonly inboxRun: boolean;
}

/** A worker's own run options (see `Webhooks.process`), validated. */
export interface WorkerRun {
  readonly attempt: number;
  readonly signal: AbortSignal | undefined;
  readonly replayId: string | undefined;
  /** Removes the handlers' listener from `signal` once the run has ended. */
  detach: (() => void) | undefined;
}

/** The lease renewal of work that outlives its answer, or of a worker's run: made when first needed. */
interface Renewal {
  timeout: PendingTimeout | undefined;
  /** Until when (the core's clock, `now()`) the lease is renewed at the most. */
  until: number;
  /** The work settled: renewals stop. */
  settled: boolean;
  /** Another attempt took the event over while the work ran; reported once. */
  lost: boolean;
}

const NO_HANDLERS: readonly WebhookHandler<WebhookEvent>[] = Object.freeze([]);

/**
 * One attempt at an event, past verification: the claim, the work it guards, and the completion, as
 * the store and the log see it. Made whole, with everything its work needs; what changes while it
 * runs is the claim's key, whether it is held, the renewal, and whether its answer went out early.
 */
export class Run<A> {
  // Declared here, assigned in the constructor in one fixed order: a run is made per delivery, and
  // plain assignments build it faster than class field initializers do.
  declare readonly kind: RunKind<A>;
  /** The receiver's scoped store, or for an event guarded by `ordering` its view with the resource. */
  declare readonly store: RunStore;
  /**
   * What verification accepted, kept whole rather than copied field by field: a run is made per
   * delivery, and the copies were four more fields and a heap number (`receivedAt`) per run.
   */
  declare readonly accepted: Accepted;
  /** The key the claim is made under: the id as verified, whatever a handler does to `event`. */
  declare readonly eventId: string;
  /** When the delivery arrived (the core's clock, `now()`), for the log; 0 without a logger. */
  declare readonly started: number;
  /** The handlers of a handler run (none at an inbox's door) and their budget. */
  declare readonly handlers: readonly WebhookHandler<WebhookEvent>[];
  declare readonly timeoutMs: number;
  /** A worker's run options; `undefined` in the request. */
  declare readonly worker: WorkerRun | undefined;
  declare readonly token: string;
  /** The store key, once the scope is known (at once but for Web Crypto's first deliveries). */
  declare key: DedupKey | undefined;
  /** False when the store failed and `onStoreError: 'process'` runs the work unclaimed. */
  declare claimed: boolean;
  declare renewal: Renewal | undefined;
  /** The sender was answered before the work ended (503 `handler_timeout`); what follows is logged only. */
  declare late: boolean;
  /** The delivery's record for the `telemetry` plug-in; `undefined` without one. */
  declare readonly telemetry: DeliveryTelemetry | undefined;

  constructor(
    kind: RunKind<A>,
    store: RunStore,
    accepted: Accepted,
    started: number,
    handlers: readonly WebhookHandler<WebhookEvent>[] = NO_HANDLERS,
    timeoutMs = 0,
    worker: WorkerRun | undefined = undefined,
    telemetry: DeliveryTelemetry | undefined = undefined,
  ) {
    this.kind = kind;
    this.store = store;
    this.accepted = accepted;
    this.eventId = accepted.eventId ?? accepted.event.id;
    this.started = started;
    this.handlers = handlers;
    this.timeoutMs = timeoutMs;
    this.worker = worker;
    this.token = nextClaimToken();
    this.key = undefined;
    this.claimed = true;
    this.renewal = undefined;
    this.late = false;
    this.telemetry = telemetry;
  }

  get event(): WebhookEvent {
    return this.accepted.event;
  }

  get secretIndex(): number {
    return this.accepted.secretIndex;
  }

  /** How long the id is remembered once handled. */
  get rememberMs(): number {
    return this.accepted.rememberMs;
  }

  /** When the receiver got the event (Unix ms): at the door, for a worker's run. */
  get receivedAt(): number {
    return this.accepted.receivedAt;
  }
}

/**
 * Steps 5 to 7 for one run: claim the event id, do the work, then complete the claim (success) or
 * release it (failure), so that of every copy of an event, concurrent or later, the work completes
 * once. Work that outlives its answer keeps the claim, renewed every third of a lease, until it
 * settles or the sender can no longer retry.
 *
 * Each step continues with `chain` and a static function that finds its engine through the run's
 * kind, so a run whose store answers synchronously (the memory store) allocates no closure and no
 * promise between its steps. Static, not bound per receiver: V8 ties the optimized code of the
 * delivery path to the functions it calls, so functions made per receiver took that code with them
 * when their receiver went, and every receiver made later compiled it again. A kind's `work` and
 * `finish` are shared by every receiver for the same reason, and find theirs as the kind's `owner`.
 * The scoped store turns a store's synchronous throw into a rejection, so every step is one `chain`.
 */
export class ExactlyOnce {
  readonly #leaseMs: number;
  readonly #leaseSeconds: number;
  readonly #failOpen: boolean;
  readonly #observers: Observers;
  /** Lease renewals of work still running after its answer; made when first needed. */
  #renewals: TimeoutQueue | undefined;

  constructor(leaseSeconds: number, onStoreError: 'reject' | 'process', observers: Observers) {
    this.#leaseSeconds = leaseSeconds;
    this.#leaseMs = leaseSeconds * 1000;
    this.#failOpen = onStoreError === 'process';
    this.#observers = observers;
  }

  /** Claim, work, settle, and answer through the kind's `finish`. Inbox runs never fail open: the queue retries. */
  run<A>(run: Run<A>): Eventual<A> {
    const { store } = run;
    const key = run.kind.inboxRun
      ? store.runKeyFor(run.eventId, run.worker?.replayId)
      : store.keyFor(run.eventId);
    if (key === undefined) {
      // The scope is still being derived (Web Crypto, first deliveries only).
      return chain(store.prefixes, run, ExactlyOnce.#runAgain, ExactlyOnce.#claimFailed);
    }
    run.key = key;
    const telemetry = store.waits ? run.telemetry : undefined;
    const leaseMs = this.#leaseMs;
    return chain(
      telemetry
        ? telemetry.step('store.claim', () => store.claim(key, run.token, leaseMs, run.rememberMs))
        : store.claim(key, run.token, leaseMs, run.rememberMs),
      run,
      ExactlyOnce.#claimed,
      ExactlyOnce.#claimFailed,
    );
  }

  static readonly #runAgain = <A>(run: Run<A>): Eventual<A> => run.kind.engine.run(run);

  /** Step 5's answer: do the work when the claim is ours, else answer why not. */
  static readonly #claimed = <A>(run: Run<A>, state: RunClaim): Eventual<A> => {
    const engine = run.kind.engine;
    if (state === 'claimed') {
      // A worker's budget (minutes) is longer than a lease: its claim is renewed from the start, so
      // a redelivery of the job meanwhile finds the event in progress. A request's budget is shorter
      // than the lease, so only its late work needs renewing.
      if (run.kind.inboxRun) engine.#renewFromStart(run);
      return run.kind.work(run, ExactlyOnce.#settle);
    }
    if (state === 'completed') return run.kind.finish(run, DUPLICATE);
    if (state === 'in_progress')
      return run.kind.finish(run, failedWith(new EventInProgressError(engine.#leaseSeconds)));
    // The `ordering` option's two answers: handled before (recorded now), or its resource is busy.
    if (state === 'stale') return run.kind.finish(run, STALE);
    if (state instanceof ResourceBusyError) return run.kind.finish(run, failedWith(state));
    return ExactlyOnce.#claimFailed(run, new TypeError(`store.claim answered ${JSON.stringify(state)}`));
  };

  static readonly #claimFailed = <A>(run: Run<A>, cause: unknown): Eventual<A> => {
    const engine = run.kind.engine;
    // A claim that timed out may still be carried out later (Redis runs what it was sent); release it
    // now, unawaited, so that it does not hold the event until its lease ends.
    if (run.key !== undefined) ignoreFailure(run.store.release(run.key, run.token));
    const error = new StoreUnavailableError('The store failed to claim the event.', { cause });
    engine.#observers.report(error, run.event);
    // An ordered run never fails open: without the store, nothing keeps its resource's order.
    if (!engine.#failOpen || run.kind.inboxRun || run.store.ordered)
      return run.kind.finish(run, failedWith(error));
    run.claimed = false;
    return run.kind.work(run, ExactlyOnce.#settle);
  };

  /** Step 6's outcome: record it, or, when the work ran out of time, answer now and record it later. */
  static readonly #settle = <A>(run: Run<A>, outcome: HandlerOutcome): Eventual<A> => {
    const engine = run.kind.engine;
    run.telemetry?.workSettled(outcome.kind);
    return outcome.kind === 'timed_out' ? engine.#answerEarly(run, outcome) : engine.#record(run, outcome);
  };

  /** Step 7: complete the claim after a success, release it after a failure; then answer. */
  #record<A>(run: Run<A>, outcome: HandlerOutcome): Eventual<A> {
    this.#stopRenewing(run);
    if (outcome.kind !== 'succeeded') return this.#release(run, outcome.error);
    if (!run.claimed) return run.kind.finish(run, run.kind.success);
    const { store } = run;
    const telemetry = store.waits ? run.telemetry : undefined;
    return chain(
      telemetry
        ? telemetry.step('store.complete', () => store.complete(run.key!, run.token, run.rememberMs))
        : store.complete(run.key!, run.token, run.rememberMs),
      run,
      ExactlyOnce.#completed,
      ExactlyOnce.#notCompleted,
    );
  }

  static readonly #completed = <A>(run: Run<A>, result: CompleteResult): A => {
    const engine = run.kind.engine;
    if (result === 'lost') engine.#leaseLost(run);
    return run.kind.finish(run, run.kind.success);
  };

  static readonly #notCompleted = <A>(run: Run<A>, cause: unknown): A => {
    const engine = run.kind.engine;
    // The work is done: acknowledging is right; the failure to remember it is reported.
    engine.#observers.report(
      new StoreUnavailableError('The store failed to record the event as handled.', { cause }),
      run.event,
    );
    return run.kind.finish(run, run.kind.success);
  };

  #release<A>(run: Run<A>, error: WebhookError): Eventual<A> {
    this.#observers.report(error, run.event);
    const ending = failedWith(error);
    if (!run.claimed) return run.kind.finish(run, ending);
    // A failure's path: closures are fine here.
    const { store } = run;
    const telemetry = store.waits ? run.telemetry : undefined;
    return chain(
      telemetry
        ? telemetry.step('store.release', () => store.release(run.key!, run.token))
        : store.release(run.key!, run.token),
      run,
      () => run.kind.finish(run, ending),
      (_, cause) => {
        // The lease still ends by itself before the sender's first retry.
        this.#observers.report(
          new StoreUnavailableError('The store failed to release the claim.', { cause }),
          run.event,
        );
        return run.kind.finish(run, ending);
      },
    );
  }

  /**
   * The work ran out of time: answer now (so the sender retries), and from here on what the work does
   * is late. The claim stays, renewed while it runs, so a retry meanwhile gets 409 rather than a
   * second run.
   */
  #answerEarly<A>(run: Run<A>, outcome: Extract<HandlerOutcome, { kind: 'timed_out' }>): A {
    this.#observers.report(outcome.error, run.event);
    // A worker's claim is being renewed already (from the start); a request's starts now.
    if (run.claimed && run.renewal === undefined) this.#renew(this.#renewalOf(run, 0), run);
    const answer = run.kind.finish(run, failedWith(outcome.error));
    run.late = true;
    outcome.rest.then((rest) => this.#record(run, rest)).then(undefined, () => {});
    return answer;
  }

  /**
   * Keep the claim, every third of a lease, fenced by the claim token: of work that outlived its answer,
   * and of a worker's run from its start. A request answered in time never gets here, so the fast path
   * pays nothing; one shared timer serves every run. Renewal stops once the sender can no longer retry
   * (its whole schedule has passed, after a worker's budget).
   */
  #renew<A>(renewal: Renewal, run: Run<A>): void {
    if (renewal.settled || renewal.lost || !run.store.renews) return;
    if (now() > renewal.until) return;
    run.store.renew(run.key!, run.token, this.#leaseMs).then(
      (result) => {
        if (result === 'renewed') return this.#scheduleRenewal(renewal, run);
        this.#leaseLost(run);
      },
      (cause: unknown) => {
        this.#observers.report(
          new StoreUnavailableError('The store failed to renew the claim of handlers still running.', {
            cause,
          }),
          run.event,
        );
        this.#scheduleRenewal(renewal, run);
      },
    );
  }

  /** The run's renewal state, made now: renewed until `extraMs` plus the sender's retry span from now. */
  #renewalOf<A>(run: Run<A>, extraMs: number): Renewal {
    const renewal: Renewal = {
      timeout: undefined,
      until: now() + extraMs + SENDER_RETRY_SPAN_MS,
      settled: false,
      lost: false,
    };
    run.renewal = renewal;
    return renewal;
  }

  #renewFromStart<A>(run: Run<A>): void {
    if (!run.store.renews) return;
    this.#scheduleRenewal(this.#renewalOf(run, run.timeoutMs), run);
  }

  #scheduleRenewal<A>(renewal: Renewal, run: Run<A>): void {
    if (renewal.settled) return;
    this.#renewals ??= new TimeoutQueue(Math.max(1, Math.floor(this.#leaseMs / 3)));
    renewal.timeout = this.#renewals.add(() => this.#renew(renewal, run));
  }

  #stopRenewing<A>(run: Run<A>): void {
    const renewal = run.renewal;
    if (renewal === undefined) return;
    renewal.settled = true;
    if (renewal.timeout) this.#renewals?.cancel(renewal.timeout);
  }

  #leaseLost<A>(run: Run<A>): void {
    const renewal = run.renewal;
    if (renewal) {
      if (renewal.lost) return;
      renewal.lost = true;
    }
    run.telemetry?.leaseLost();
    this.#observers.report(new LeaseLostError(run.eventId), run.event);
  }
}

/** A call whose failure changes nothing (a lease ends by itself): its rejection is not left unhandled. */
function ignoreFailure(pending: Eventual<unknown>): void {
  if (pending instanceof Promise) pending.catch(() => {});
}
