import { nextClaimToken } from './claim-token.js';
import { EventInProgressError, LeaseLostError, StoreUnavailableError, type WebhookError } from './errors.js';
import { chain, type Eventual } from './eventual.js';
import type { Observers } from './observers.js';
import type { HandlerOutcome } from './run-handlers.js';
import type { DedupKey, ScopedStore } from './scoped-store.js';
import { SENDER_RETRY_SPAN_MS } from './sender-schedule.js';
import { type PendingTimeout, TimeoutQueue } from './timeout-queue.js';
import type { ClaimResult, CompleteResult, WebhookEvent } from './types.js';

/** How a guarded run answers: a success of its own kind, a duplicate, or an error of the status table. */
export interface Ending {
  readonly code: 'handled' | 'queued' | 'duplicate' | WebhookError['code'];
  readonly error?: WebhookError;
}

export const HANDLED: Ending = Object.freeze({ code: 'handled' });
export const QUEUED: Ending = Object.freeze({ code: 'queued' });
export const DUPLICATE: Ending = Object.freeze({ code: 'duplicate' });

const failedWith = (error: WebhookError): Ending => ({ code: error.code, error });

/**
 * One attempt at an event, past verification: the claim, the work it guards (handlers, or an inbox
 * write), and the completion, as the store, the renewal timer and the log see it.
 */
export class Run {
  readonly event: WebhookEvent;
  /** The key the claim is made under: the id as verified, whatever a handler does to `event`. */
  readonly eventId: string;
  readonly secretIndex: number;
  /** How long the id is remembered once handled. */
  readonly rememberMs: number;
  /** When the delivery arrived (`performance.now()`), for the log; 0 without a logger. */
  readonly started: number;
  /** The work, started once the claim is held (or the store failed and `onStoreError` lets it run). */
  readonly work: (run: Run) => Eventual<HandlerOutcome>;
  /** What a success answers: `handled`, or `queued` at an inbox's door. */
  readonly success: Ending;
  /** Inbox runs are keyed apart from the door (see `ScopedStore.runKeyFor`); `replayId` apart again. */
  readonly inboxRun: boolean;
  readonly replayId: string | undefined;
  /** Told how work that outlived its answer ended. */
  readonly onLate: (run: Run, ending: Ending) => void;
  /** For handler runs: the budget, the attempt count and when the event was received (Unix ms). */
  timeoutMs = 0;
  attempt = 1;
  receivedAt = 0;
  /** A worker's own abort signal (shutdown), passed on to the handlers' `ctx.signal`. */
  signal: AbortSignal | undefined = undefined;
  readonly token = nextClaimToken();
  key: DedupKey | undefined = undefined;
  /** False when the store failed and `onStoreError: 'process'` runs the work unclaimed. */
  claimed = true;
  settled = false;
  /** Another attempt took the event over while the work ran; reported once. */
  leaseLost = false;
  renewal: PendingTimeout | undefined = undefined;
  /** Until when (`performance.now()`) the lease is renewed at the most. */
  renewUntil = 0;

  constructor(
    event: WebhookEvent,
    secretIndex: number,
    rememberMs: number,
    started: number,
    work: (run: Run) => Eventual<HandlerOutcome>,
    options: {
      readonly success: Ending;
      readonly onLate: (run: Run, ending: Ending) => void;
      readonly inboxRun?: boolean;
      readonly replayId?: string | undefined;
    },
  ) {
    this.event = event;
    this.eventId = event.id;
    this.secretIndex = secretIndex;
    this.rememberMs = rememberMs;
    this.started = started;
    this.work = work;
    this.success = options.success;
    this.onLate = options.onLate;
    this.inboxRun = options.inboxRun ?? false;
    this.replayId = options.replayId;
  }
}

/**
 * Steps 5 to 7 for one run: claim the event id, do the work, then complete the claim (success) or
 * release it (failure), so that of every copy of an event, concurrent or later, the work completes
 * once. Work that outlives its answer keeps the claim, renewed every third of a lease, until it
 * settles or the sender can no longer retry.
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

  /** Claim, work, settle; `failOpen` is false for inbox runs, which the queue retries instead. */
  run(store: ScopedStore, run: Run): Eventual<Ending> {
    const key = run.inboxRun ? store.runKeyFor(run.eventId, run.replayId) : store.keyFor(run.eventId);
    if (key === undefined) {
      // The scope is still being derived (Web Crypto, first deliveries only).
      return store.prefixes.then(
        () => this.run(store, run),
        (cause: unknown) => this.#claimFailed(store, run, cause),
      );
    }
    run.key = key;
    let state: Eventual<ClaimResult>;
    try {
      state = store.claim(key, run.token, this.#leaseMs, run.rememberMs);
    } catch (cause) {
      return this.#claimFailed(store, run, cause);
    }
    return chain(
      state,
      (result) => this.#afterClaim(store, run, result),
      (cause) => this.#claimFailed(store, run, cause),
    );
  }

  #afterClaim(store: ScopedStore, run: Run, state: unknown): Eventual<Ending> {
    if (state === 'claimed') return this.#work(store, run);
    if (state === 'completed') return DUPLICATE;
    if (state === 'in_progress') return failedWith(new EventInProgressError(this.#leaseSeconds));
    return this.#claimFailed(store, run, new TypeError(`store.claim answered ${JSON.stringify(state)}`));
  }

  #claimFailed(store: ScopedStore, run: Run, cause: unknown): Eventual<Ending> {
    // A claim that timed out may still be carried out later (Redis runs what it was sent); release it
    // now, unawaited, so that it does not hold the event until its lease ends.
    releaseQuietly(store, run);
    const error = new StoreUnavailableError('The store failed to claim the event.', { cause });
    this.#observers.report(error, run.event);
    if (!this.#failOpen || run.inboxRun) return failedWith(error);
    run.claimed = false;
    return this.#work(store, run);
  }

  #work(store: ScopedStore, run: Run): Eventual<Ending> {
    return chain(run.work(run), (outcome) => this.#settle(store, run, outcome));
  }

  #settle(store: ScopedStore, run: Run, outcome: HandlerOutcome): Eventual<Ending> {
    if (outcome.kind === 'timed_out') return this.#answerEarly(store, run, outcome);
    run.settled = true;
    if (run.renewal) this.#renewals?.cancel(run.renewal);
    if (outcome.kind === 'failed') return this.#release(store, run, outcome.error);
    if (!run.claimed) return run.success;
    let completed: Eventual<CompleteResult>;
    try {
      completed = store.complete(run.key!, run.token, run.rememberMs);
    } catch (cause) {
      completed = Promise.reject(cause);
    }
    return chain(
      completed,
      (result) => {
        if (result === 'lost') this.#leaseLost(run);
        return run.success;
      },
      (cause) => {
        // The work is done: acknowledging is right; the failure to remember it is reported.
        this.#observers.report(
          new StoreUnavailableError('The store failed to record the event as handled.', { cause }),
          run.event,
        );
        return run.success;
      },
    );
  }

  #release(store: ScopedStore, run: Run, error: WebhookError): Eventual<Ending> {
    this.#observers.report(error, run.event);
    const ending = failedWith(error);
    if (!run.claimed) return ending;
    let released: Eventual<void>;
    try {
      released = store.release(run.key!, run.token);
    } catch (cause) {
      released = Promise.reject(cause);
    }
    return chain(
      released,
      () => ending,
      (cause) => {
        // The lease still ends by itself before the sender's first retry.
        this.#observers.report(
          new StoreUnavailableError('The store failed to release the claim.', { cause }),
          run.event,
        );
        return ending;
      },
    );
  }

  /**
   * The work ran out of time: answer now (so the sender retries), and from here on what the work does
   * is late. The claim stays, renewed while it runs, so a retry meanwhile gets 409 rather than a
   * second run.
   */
  #answerEarly(
    store: ScopedStore,
    run: Run,
    outcome: Extract<HandlerOutcome, { kind: 'timed_out' }>,
  ): Ending {
    this.#observers.report(outcome.error, run.event);
    if (run.claimed) this.#renew(store, run);
    outcome.rest
      .then((rest) => this.#settle(store, run, rest))
      .then(
        (ending) => run.onLate(run, ending),
        () => {},
      );
    return failedWith(outcome.error);
  }

  /**
   * Keep the claim of work that outlived its answer, every third of a lease, fenced by the claim token.
   * Only late work gets here, so the fast path pays nothing; one shared timer serves every run.
   * Renewal stops once the sender can no longer retry (its whole schedule has passed).
   */
  #renew(store: ScopedStore, run: Run): void {
    if (run.settled || run.leaseLost || !store.renews) return;
    const now = performance.now();
    if (run.renewUntil === 0) run.renewUntil = now + SENDER_RETRY_SPAN_MS;
    if (now > run.renewUntil) return;
    store.renew(run.key!, run.token, this.#leaseMs).then(
      (result) => {
        if (result === 'renewed') return this.#scheduleRenewal(store, run);
        this.#leaseLost(run);
      },
      (cause: unknown) => {
        this.#observers.report(
          new StoreUnavailableError('The store failed to renew the claim of handlers still running.', {
            cause,
          }),
          run.event,
        );
        this.#scheduleRenewal(store, run);
      },
    );
  }

  #scheduleRenewal(store: ScopedStore, run: Run): void {
    if (run.settled) return;
    this.#renewals ??= new TimeoutQueue(Math.max(1, Math.floor(this.#leaseMs / 3)));
    run.renewal = this.#renewals.add(() => this.#renew(store, run));
  }

  #leaseLost(run: Run): void {
    if (run.leaseLost) return;
    run.leaseLost = true;
    this.#observers.report(new LeaseLostError(run.eventId), run.event);
  }
}

function releaseQuietly(store: ScopedStore, run: Run): void {
  if (run.key === undefined) return;
  try {
    const released = store.release(run.key, run.token);
    if (released instanceof Promise) released.catch(() => {});
  } catch {
    // The lease ends by itself.
  }
}
