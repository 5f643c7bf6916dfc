import type { Scheduler } from 'fast-check';
import type { IdempotencyStore } from 'service-webhooks/core';
import { checkHistory, type HistoryViolation } from './history-check.js';
import { RealClock, VirtualClock } from './history-clock.js';
import { formatHistory } from './history-format.js';
import { type RecordedHistory, runHistory } from './history-runner.js';
import { checkOrdering } from './ordering-check.js';
import type { StoreCheckContext } from './store-check-context.js';
import { type FastCheck, type HistoryPlan, historyPlans } from './store-histories.js';

/**
 * Options of {@link checkStore}.
 *
 * @example
 * ```ts
 * const options: CheckStoreOptions = { createStore: () => new MyStore(), histories: 200, seed: 42 };
 * ```
 */
export interface CheckStoreOptions {
  /**
   * A store for one history: a fresh one, or one on a shared backend (every key the checker uses
   * starts with `context.keyPrefix`, unique to the history, so histories never share records). Use
   * `context.now` with `clock: 'virtual'` and `context.fault` around backend requests where your store
   * allows it ({@link StoreCheckContext}).
   */
  createStore: (context: StoreCheckContext) => IdempotencyStore | Promise<IdempotencyStore>;
  /** Called after each history with the store it used. */
  teardown?: ((store: IdempotencyStore) => void | Promise<void>) | undefined;
  /**
   * How many histories to generate and check (each one `concurrency` clients, each a few calls).
   * With the defaults, 1,000 real-time histories take about a minute; virtual ones a few seconds.
   * @default 1_000
   */
  histories?: number | undefined;
  /**
   * Clients per history, each running its own program at the same time as the others.
   * @default 8
   */
  concurrency?: number | undefined;
  /**
   * The seed of the generated histories (and of the scheduler's interleavings). A failure reports its
   * seed: pass it back to reproduce it (exactly on the virtual clock; on the real one the same plans
   * run, with the timing the machine gives them).
   * @default a random seed, reported
   */
  seed?: number | undefined;
  /** With `seed`, the `path` a failure reported: replays its shrunk history directly. */
  path?: string | undefined;
  /**
   * Whether the store implements the optional `renew`; `false` for a store without it (the checker
   * then never renews, and checks that the store has no `renew`, as `storeConformanceSuite` does).
   * @default true
   */
  renews?: boolean | undefined;
  /**
   * Whether the store implements the optional ordering operations (`claimResource`, `renewResource`,
   * `releaseResource`, `completeOrdered`): `true` checks them too, first, with histories of their own
   * (rule 9: linearizable against their model, a watermark that lives its own TTL).
   * @default false
   */
  ordering?: boolean | undefined;
  /** Stop after this long (ms) and report the histories checked so far; shrinking a failure counts. */
  timeLimitMs?: number | undefined;
  /**
   * `'real'`: waits are real (for stores on their own clock: a database's, `Date.now()`). `'virtual'`:
   * the store uses `context.now` as its only clock, and time moves only when every client waits for
   * it: histories take milliseconds and replay exactly.
   * @default 'real'
   */
  clock?: 'real' | 'virtual' | undefined;
  /**
   * The time scale of a history: leases and TTLs are one or two units (or an hour), waits land around
   * their ends. Raise it for a store whose calls take more than a few milliseconds.
   * @default 30
   */
  timeUnitMs?: number | undefined;
  /**
   * How far apart the store's clock and the checker's may place the end of a lease or TTL: clock
   * granularity (a whole millisecond) and rounding. A lease seen ending earlier or later than that is
   * a violation.
   * @default 2 on the real clock, 0 on the virtual one
   */
  clockToleranceMs?: number | undefined;
  /**
   * A client gives up on a call after this long, as the core does at `storeTimeoutMs`, and moves on; the
   * call is still recorded when it settles (its write may land late). An injected slow answer takes
   * this plus one time unit.
   * @default 4 × timeUnitMs
   */
  callDeadlineMs?: number | undefined;
  /**
   * Whether `context.fault` injects failures and slow answers: up to three per history, among its first
   * forty hook calls, one in four of them slow.
   * @default true
   */
  faults?: boolean | undefined;
  /**
   * Once a history fails, how long (ms) fast-check may spend shrinking it to a shorter one.
   * @default 20_000
   */
  shrinkTimeMs?: number | undefined;
}

/**
 * What {@link checkStore} found. `histories` counts the generated histories run (not the re-runs while
 * shrinking), `calls` the store calls they made, `inconclusive` the keys whose linearizability search
 * ran out of its budget (they pass). On failure, `violation` names the rule broken, `history` prints
 * the shrunk history, and `seed` and `path` replay it.
 *
 * @example
 * ```ts
 * const report = await checkStore({ createStore: () => new MyStore() });
 * if (!report.ok) throw new Error(`${report.violation}\n${report.history}\nreplay with seed ${report.seed}`);
 * ```
 */
export type StoreCheckReport =
  | {
      readonly ok: true;
      readonly histories: number;
      readonly calls: number;
      readonly seed: number;
      readonly durationMs: number;
      readonly inconclusive: number;
      /** True when `timeLimitMs` ended the check before `histories` ran. */
      readonly interrupted: boolean;
    }
  | {
      readonly ok: false;
      readonly histories: number;
      readonly calls: number;
      readonly seed: number;
      readonly path: string;
      readonly durationMs: number;
      /** When the first failing history was found (ms from the start); the rest is shrinking. */
      readonly foundAfterMs: number;
      readonly violation: string;
      /** The store rule (1 to 8, docs: "Writing your own store", https://service-webhooks.github.io/service-webhooks/stores/custom.html#the-rules) that the history breaks. */
      readonly rule: number;
      readonly history: string;
      readonly shrinks: number;
    };

/**
 * A contract problem found before any history runs (a missing or unexpected `renew`), a missing
 * fast-check, a `timeLimitMs` that ended the check before its first history finished (so nothing was
 * checked), or (from `storeModelSuite`) a violation.
 *
 * @example
 * ```ts
 * await checkStore({ createStore: () => storeWithoutRenew }).catch((error) => error instanceof StoreModelError);
 * ```
 */
export class StoreModelError extends Error {
  override name = 'StoreModelError';
}

/** A generated history the model cannot explain: thrown inside the property, so fast-check shrinks it. */
class HistoryViolationError extends Error {
  constructor(
    readonly violation: HistoryViolation,
    readonly printed: string,
  ) {
    super(`rule ${violation.rule}: ${violation.summary}`);
  }
}

const DEFAULT_HISTORIES = 1_000;
const DEFAULT_UNIT_MS = 30;
/** The linearizability search's budget per key: far above what an 8-client history needs. */
const MAX_SEARCH_STEPS = 200_000;

/**
 * Load fast-check, an optional peer dependency needed by the store checker only, so that importing
 * `service-webhooks/testing` never requires it.
 *
 * @example
 * ```ts
 * const fc = await loadFastCheck();
 * ```
 */
export async function loadFastCheck(
  load: () => Promise<FastCheck> = () => import('fast-check'),
): Promise<FastCheck> {
  try {
    return await load();
  } catch (cause) {
    throw new StoreModelError(
      'checkStore and storeModelSuite need the fast-check package (an optional peer dependency of service-webhooks): npm install --save-dev fast-check',
      { cause },
    );
  }
}

/**
 * Check a store against the model of the `IdempotencyStore` rules, the way a proof would rather than a
 * sample: fast-check generates histories (several clients at once, each claiming, completing,
 * releasing and renewing a few keys that differ only in case, accents, normalization or their tail, or
 * share a 32-bit hash, with tokens shaped like the core's, leases and TTLs that end mid-history, retries
 * that arrive as a key frees up, deliveries frozen past their lease, clients that vanish holding a
 * lease, and failures injected where the store allows), runs each against the store, and checks that
 * some order of its calls, consistent with real time and with each call taking effect within its
 * interval, gives every answer the model gives (linearizability). A failure is shrunk to a short
 * history, printed, and reproducible from its seed.
 *
 * @example
 * ```ts
 * import { MemoryStore } from 'service-webhooks';
 * import { checkStore } from 'service-webhooks/testing';
 *
 * const report = await checkStore({ createStore: ({ now }) => new MemoryStore({ now }), clock: 'virtual' });
 * if (!report.ok) throw new Error(`${report.violation}\n${report.history}\nseed: ${report.seed}`);
 * ```
 */
export async function checkStore(options: CheckStoreOptions): Promise<StoreCheckReport> {
  const fc = await loadFastCheck();
  const started = performance.now();
  const virtual = options.clock === 'virtual';
  const renews = options.renews ?? true;
  const concurrency = positiveInteger(options.concurrency ?? 8, 'concurrency');
  const histories = positiveInteger(options.histories ?? DEFAULT_HISTORIES, 'histories');
  const unitMs = positiveInteger(options.timeUnitMs ?? DEFAULT_UNIT_MS, 'timeUnitMs');
  const deadlineMs = options.callDeadlineMs ?? 4 * unitMs;
  const toleranceMs = options.clockToleranceMs ?? (virtual ? 0 : 2);
  const shrinkTimeMs = options.shrinkTimeMs ?? 20_000;
  const seed = options.seed ?? (Math.random() * 0x7fffffff) | 0;
  const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;

  let checked = 0;
  let calls = 0;
  let inconclusive = 0;
  let failedAt: number | undefined;
  let setupError: unknown;
  let sequence = 0;

  const runOne = async (plan: HistoryPlan, scheduler: Scheduler): Promise<RecordedHistory> => {
    let store: IdempotencyStore | undefined;
    const openStore = async (context: StoreCheckContext) => {
      try {
        const created = await options.createStore(context);
        checkRenew(created, renews);
        store = created;
        return created;
      } catch (error) {
        setupError = error;
        throw error;
      }
    };
    // Setup and teardown failures are the caller's, reported as they are (not shrunk as violations).
    const tearDown = async () => {
      if (store === undefined) return;
      try {
        await options.teardown?.(store);
      } catch (error) {
        setupError ??= error;
        throw error;
      }
    };
    let history: RecordedHistory;
    try {
      history = await runHistory(plan, {
        openStore,
        clock: virtual ? new VirtualClock() : new RealClock(),
        keyPrefix: `${run}-${++sequence}-`,
        gate: (label) => scheduler.schedule(Promise.resolve(label), label),
        release: (until) => scheduler.waitFor(until),
        deadlineMs,
        hangMs: Math.max(10_000, deadlineMs * 10),
        renews,
        longestWaitMs: 4 * unitMs,
        slowMs: deadlineMs + unitMs,
      });
    } catch (error) {
      await tearDown().catch(() => {});
      throw error;
    }
    await tearDown();
    return history;
  };

  if (options.ordering === true) {
    const ordering = await checkOrdering({
      createStore: options.createStore,
      teardown: options.teardown,
      histories: Math.max(1, Math.ceil(histories / 4)),
      seed,
      run,
      virtual,
      unitMs,
    });
    if (!ordering.ok) {
      const durationMs = performance.now() - started;
      return {
        ok: false,
        histories: ordering.histories,
        calls: ordering.calls,
        seed,
        path: '',
        durationMs,
        foundAfterMs: durationMs,
        violation: ordering.violation,
        rule: 9,
        history: ordering.history,
        shrinks: 0,
      };
    }
  }

  const property = fc.asyncProperty(
    historyPlans(fc, { concurrency, unitMs, renews, faults: options.faults ?? true }),
    fc.scheduler(),
    async (plan, scheduler) => {
      if (setupError !== undefined) throw setupError;
      // Past the shrinking budget, every remaining candidate passes at once: fast-check then ends with the
      // shortest failing history found so far.
      if (failedAt !== undefined && performance.now() - failedAt > shrinkTimeMs) return;
      const history = await runOne(plan, scheduler);
      if (failedAt === undefined) {
        checked++;
        calls += history.calls.length;
      }
      const verdict = checkHistory(history, { toleranceMs, maxSteps: MAX_SEARCH_STEPS });
      if (verdict.ok) {
        if (failedAt === undefined) inconclusive += verdict.inconclusive;
        return;
      }
      failedAt ??= performance.now();
      throw new HistoryViolationError(verdict.violation, formatHistory(history, verdict.violation));
    },
  );

  const parameters: Parameters<typeof fc.check>[1] = {
    seed,
    numRuns: histories,
    markInterruptAsFailure: false,
  };
  if (options.path !== undefined) parameters.path = options.path;
  if (options.timeLimitMs !== undefined) parameters.interruptAfterTimeLimit = options.timeLimitMs;
  const details = await fc.check(property, parameters);
  const durationMs = performance.now() - started;
  if (!details.failed) {
    return {
      ok: true,
      histories: checked,
      calls,
      seed,
      durationMs,
      inconclusive,
      interrupted: details.interrupted,
    };
  }
  const failure = details.errorInstance;
  // fast-check calls a run interrupted before any history passed a failure, with no error: here that
  // is a time limit shorter than one history (a loaded machine's, or a slow store's), which checked
  // nothing and must not read as a pass, nor throw a bare null.
  if (failure === null && details.interrupted) {
    throw new StoreModelError(
      `checkStore: timeLimitMs (${options.timeLimitMs} ms) ended the check before its first history finished, so nothing was checked. Raise timeLimitMs (the check stopped after ${Math.round(durationMs)} ms), or check with clock: 'virtual' if the store can take its clock from the context.`,
    );
  }
  if (!(failure instanceof HistoryViolationError)) throw failure;
  return {
    ok: false,
    histories: checked,
    calls,
    seed,
    path: details.counterexamplePath ?? '',
    durationMs,
    foundAfterMs: (failedAt ?? performance.now()) - started,
    violation: failure.message,
    rule: failure.violation.rule,
    history: `${failure.violation.detail}\n${failure.printed}`,
    shrinks: details.numShrinks,
  };
}

const MISSING_RENEW =
  'the store has no renew method: implement renew, or pass renews: false (without it, a handler that outlives leaseSeconds may run twice)';

function checkRenew(store: IdempotencyStore, renews: boolean): void {
  const has = typeof store.renew === 'function';
  if (renews && !has) throw new StoreModelError(MISSING_RENEW);
  if (!renews && has) {
    throw new StoreModelError(
      'the store has a renew method but renews: false was passed: drop renews: false so that renew is checked',
    );
  }
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`checkStore \`${name}\` must be a positive whole number; got ${String(value)}.`);
  }
  return value;
}
