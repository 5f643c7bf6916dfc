import { ABSENT, type ModelRecord, modelSteps, type StoreAnswer, type StoreCall } from './store-model.js';
import { TimeBounds } from './time-bounds.js';

/**
 * One call on one key as a concurrent history recorded it, for {@link checkLinearizable}.
 *
 * `startSeq` and `endSeq` order the history's events (a call precedes another when it returned before
 * the other was made: `endSeq < startSeq`); `startMs` and `endMs` are the clock at those events, the
 * interval in which the call took effect. A call whose outcome is unknown (it threw, or never
 * answered) has `answer: UNKNOWN` and both ends at Infinity: it may have taken effect at any time after
 * it was made, or never.
 *
 * @example
 * ```ts
 * const observed: ObservedCall = {
 *   id: 3, call: { method: 'claim', token: 'p0:1', ms: 40 }, answer: 'claimed',
 *   startSeq: 5, endSeq: 9, startMs: 12.1, endMs: 12.6,
 * };
 * ```
 */
export interface ObservedCall {
  readonly id: number;
  readonly call: StoreCall;
  readonly answer: StoreAnswer | typeof UNKNOWN;
  readonly startSeq: number;
  readonly endSeq: number;
  readonly startMs: number;
  readonly endMs: number;
}

/**
 * The answer of a call that threw or never answered: it may or may not have taken effect.
 *
 * @example
 * ```ts
 * const threw: ObservedCall = { ...call, answer: UNKNOWN, endSeq: Infinity, endMs: Infinity };
 * ```
 */
export const UNKNOWN: unique symbol = Symbol('unknown outcome');

/**
 * How far the search may go: `toleranceMs` is how far apart the store's clock and the checker's may
 * place a lease's or TTL's end (clock granularity, rounding); `maxSteps` bounds the search, whose worst
 * case is exponential in the number of overlapping calls.
 *
 * @example
 * ```ts
 * checkLinearizable(calls, { toleranceMs: 2, maxSteps: 200_000 });
 * ```
 */
export interface LinearizabilityOptions {
  readonly toleranceMs: number;
  readonly maxSteps: number;
}

/**
 * The verdict on one key's calls. A violation carries what explains it best: the longest prefix of
 * calls the search could order (`explained`, call ids in that order), the call that no order lets come
 * next (`stuck`: of the calls not yet ordered, the one that returned first), the record the model held
 * there, the call that wrote it, and the answers the model allowed the stuck call.
 *
 * @example
 * ```ts
 * const verdict = checkLinearizable(calls, options);
 * if (verdict.kind === 'violation') console.log(verdict.stuck, verdict.allowed);
 * ```
 */
export type KeyVerdict =
  | { readonly kind: 'linearizable' }
  | { readonly kind: 'inconclusive'; readonly steps: number }
  | {
      readonly kind: 'violation';
      readonly explained: readonly number[];
      readonly stuck: number;
      readonly record: ModelRecord;
      readonly writer: number | undefined;
      readonly allowed: readonly StoreAnswer[];
    };

interface Configuration {
  readonly record: ModelRecord;
  /** Index (in the sorted calls) of the call that wrote `record`, or -1. */
  readonly writer: number;
  readonly zone: TimeBounds;
}

class SearchBudgetExhausted extends Error {}

/**
 * Whether one key's concurrent calls are linearizable with respect to the store model: whether some
 * order of them (1) respects real time (a call that returned before another was made comes first),
 * (2) gives every call that answered the answer the model gives in that order, and (3) lets each call
 * take effect at an instant within its interval, so that every lease and TTL the model consults had, or
 * had not, ended as the model assumed (within `toleranceMs`).
 *
 * The search is Wing and Gong's, with Lowe's memoization, as Knossos and Porcupine run it: try each call
 * that may come next (no call not yet ordered returned before it was made), apply it to the model, go
 * deeper, backtrack on a mismatch, and never explore the same (set of ordered calls, model state) twice.
 * Time makes the model state a zone too: each call's instant is a variable within its interval, each
 * lease or TTL consulted adds "at most" or "at least" `ms` between the instant of the call that wrote the
 * record and the instant of the call that read it, and the instants of an order never decrease
 * (`TimeBounds`). A call whose outcome is unknown may be placed anywhere after it was made, or left
 * out: a store may fail loudly, and a write may still land after its caller gave up on it.
 *
 * Keys are checked one at a time: linearizability is local (Herlihy and Wing), so a history is
 * linearizable exactly when each key's sub-history is. That keeps each search small.
 *
 * @example
 * ```ts
 * const verdict = checkLinearizable(callsOfOneKey, { toleranceMs: 2, maxSteps: 200_000 });
 * if (verdict.kind === 'violation') throw new Error(`call ${verdict.stuck} cannot be explained`);
 * ```
 */
export function checkLinearizable(
  calls: readonly ObservedCall[],
  options: LinearizabilityOptions,
): KeyVerdict {
  const sorted = [...calls].sort((a, b) => a.startSeq - b.startSeq);
  const count = sorted.length;
  const definite = sorted.map((call) => call.answer !== UNKNOWN);
  const ordered = new Uint8Array(count);
  const path: number[] = [];
  const seen = new Set<string>();
  let mask = 0n;
  let steps = 0;
  let deepest: { path: number[]; config: Configuration; depth: number } | undefined;
  const bit = sorted.map((_, index) => 1n << BigInt(index));
  const mustOrder = definite.filter(Boolean).length;

  /** Every configuration the call at `index` can leave from `config` answering `answer` (any if UNKNOWN). */
  const successors = (
    config: Configuration,
    index: number,
    answer: StoreAnswer | typeof UNKNOWN,
  ): Configuration[] => {
    const observed = sorted[index]!;
    const placed = config.zone
      .within(TimeBounds.NEXT, observed.startMs, observed.endMs)
      ?.atLeastAfter(TimeBounds.NEXT, TimeBounds.LAST, 0);
    if (placed === undefined) return [];
    const out: Configuration[] = [];
    for (const step of modelSteps(config.record, observed.call)) {
      if (answer !== UNKNOWN && step.answer !== answer) continue;
      const zone = timed(placed, config.record, step.live, options.toleranceMs);
      if (zone === undefined) continue;
      const keeps = step.wrote ? 'next' : step.next.state === 'absent' ? 'none' : 'kept';
      out.push({
        record: step.next,
        writer: keeps === 'next' ? index : keeps === 'kept' ? config.writer : -1,
        zone: zone.advance(keeps),
      });
    }
    return out;
  };

  const search = (config: Configuration, remaining: number): boolean => {
    if (remaining === 0) return true;
    const depth = mustOrder - remaining;
    if (deepest === undefined || depth > deepest.depth) deepest = { path: [...path], config, depth };
    const key = `${mask.toString(36)}|${fingerprint(config)}`;
    if (seen.has(key)) return false;
    seen.add(key);
    if (++steps > options.maxSteps) throw new SearchBudgetExhausted();
    // A call may come next only if no call still unordered returned before it was made.
    let firstEnd = Number.POSITIVE_INFINITY;
    for (let i = 0; i < count; i++) {
      if (!ordered[i] && definite[i] && sorted[i]!.endSeq < firstEnd) firstEnd = sorted[i]!.endSeq;
    }
    for (let i = 0; i < count && sorted[i]!.startSeq < firstEnd; i++) {
      if (ordered[i]) continue;
      for (const next of successors(config, i, sorted[i]!.answer)) {
        ordered[i] = 1;
        mask ^= bit[i]!;
        path.push(sorted[i]!.id);
        const found = search(next, definite[i] ? remaining - 1 : remaining);
        ordered[i] = 0;
        mask ^= bit[i]!;
        path.pop();
        if (found) return true;
      }
    }
    return false;
  };

  const start: Configuration = { record: ABSENT, writer: -1, zone: TimeBounds.unconstrained() };
  try {
    if (search(start, mustOrder)) return { kind: 'linearizable' };
  } catch (error) {
    if (error instanceof SearchBudgetExhausted) return { kind: 'inconclusive', steps };
    throw error;
  }
  // The deepest configuration reached: the call that returned first among those left is the one no
  // order could explain there (every other candidate could still have been placed after it).
  const { config, path: explained } = deepest ?? { config: start, path: [] };
  const placed = new Set(explained);
  let stuck = -1;
  for (let i = 0; i < count; i++) {
    const candidate = sorted[i]!;
    if (!placed.has(candidate.id) && definite[i] && (stuck < 0 || candidate.endSeq < sorted[stuck]!.endSeq)) {
      stuck = i;
    }
  }
  const stuckCall = sorted[stuck]!;
  const allowed = (['claimed', 'in_progress', 'completed', 'lost', 'renewed', undefined] as const).filter(
    (answer) => successors(config, stuck, answer).length > 0,
  );
  return {
    kind: 'violation',
    explained,
    stuck: stuckCall.id,
    record: config.record,
    writer: config.writer >= 0 ? sorted[config.writer]!.id : undefined,
    allowed,
  };
}

/** The zone with the liveness the step needs of `record` at the call's instant, or undefined. */
function timed(
  zone: TimeBounds,
  record: ModelRecord,
  live: boolean | undefined,
  toleranceMs: number,
): TimeBounds | undefined {
  if (live === undefined || record.state === 'absent') return zone;
  return live
    ? zone.atMostAfter(TimeBounds.NEXT, TimeBounds.WRITER, record.ms + toleranceMs)
    : zone.atLeastAfter(TimeBounds.NEXT, TimeBounds.WRITER, record.ms - toleranceMs);
}

function fingerprint(config: Configuration): string {
  const { record } = config;
  const state =
    record.state === 'absent'
      ? 'a'
      : record.state === 'completed'
        ? `c${record.ms}`
        : `p${record.ms}:${record.token}`;
  return `${state}|${config.writer}|${config.zone.fingerprint()}`;
}
