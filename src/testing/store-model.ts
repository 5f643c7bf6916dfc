import type { ClaimResult, CompleteResult, RenewResult } from 'service-webhooks/core';

/**
 * One call of the `IdempotencyStore` contract, as the store model and the store checker see it.
 *
 * @example
 * ```ts
 * const call: StoreCall = { method: 'claim', token: 'a1b2…:7', ms: 45_000 };
 * ```
 */
export type StoreCall =
  | { readonly method: 'claim'; readonly token: string /** The lease. */; readonly ms: number }
  | { readonly method: 'complete'; readonly token: string /** The TTL. */; readonly ms: number }
  | { readonly method: 'renew'; readonly token: string /** The lease. */; readonly ms: number }
  | { readonly method: 'release'; readonly token: string };

/**
 * What a call answered: `claim`, `complete` and `renew` answer a word, `release` nothing.
 *
 * @example
 * ```ts
 * const answer: StoreAnswer = await store.claim(key, token, 45_000);
 * ```
 */
export type StoreAnswer = ClaimResult | CompleteResult | RenewResult | undefined;

/**
 * One key's record in the model. `in_progress` and `completed` count time from the instant the call that
 * wrote them took effect, which the model does not hold: a sequential user (see
 * {@link SequentialStoreModel}) knows it, the linearizability search keeps bounds on it.
 *
 * A record whose lease or TTL has ended is, for every call, the same as no record (the holder of an
 * ended lease may complete or renew it, but so may anyone while nobody has taken it over): so the model
 * has no "ended" state, and a record found ended is treated as absent.
 *
 * @example
 * ```ts
 * const record: ModelRecord = { state: 'in_progress', token, ms: 45_000 };
 * ```
 */
export type ModelRecord =
  | { readonly state: 'absent' }
  | { readonly state: 'in_progress'; readonly token: string /** The lease. */; readonly ms: number }
  | { readonly state: 'completed' /** The TTL. */; readonly ms: number };

/**
 * The record of a key nothing has written (or whose record was released or ended).
 *
 * @example
 * ```ts
 * modelSteps(ABSENT, { method: 'claim', token: 'a', ms: 45_000 }); // [{ answer: 'claimed', … }]
 * ```
 */
export const ABSENT: ModelRecord = Object.freeze({ state: 'absent' });

/**
 * One way a call can go from a record: whether the record had to be live (`true`), ended (`false`) or
 * either (`undefined`: the answer does not depend on it) at the call's instant, what the call answers
 * and what record it leaves. `wrote` says whether the call wrote a record that counts time from its own
 * instant (a claim, a completion, a renewal that succeeded).
 *
 * @example
 * ```ts
 * for (const step of modelSteps(record, call)) if (step.answer === observed) …
 * ```
 */
export interface ModelStep {
  readonly live: boolean | undefined;
  readonly answer: StoreAnswer;
  readonly next: ModelRecord;
  readonly wrote: boolean;
}

/**
 * The sequential specification of the store rules (the docs' "Writing your own store", DESIGN.md "store
 * semantics"): every way `call` can go from `record`, one per answer the rules allow. Rules 1 to 4
 * and 6 are here; the checker adds 5 (one atomic step: every concurrent history must be explained by
 * some order of these steps), 7 (keys intact: each key is a record of its own, and keys that differ
 * only in case, accents, normalization or their tail are different keys) and 8 (fail loudly: a call
 * that throws may or may not have taken effect, a call that answers must answer the truth).
 *
 * - claim (rule 1): a live lease answers `in_progress`, a live completion `completed`; otherwise the
 *   call takes the key for `token` until its lease ends, and answers `claimed`.
 * - complete (rule 2): the holder's token completes (even after its lease ended); anyone completes
 *   where nothing is live; another token's live lease or a live completion answers `lost`, changing
 *   nothing (so completing twice is `lost`).
 * - release (rule 3): deletes the record only while `token` holds it in progress; never a completion.
 * - renew (rule 4): the same terms as complete, leaving the key held by `token` for a new lease from now.
 * - expiry (rule 6): a lease or TTL counts from the instant of the call that wrote it.
 *
 * @example
 * ```ts
 * modelSteps({ state: 'completed', ms: 60_000 }, { method: 'claim', token, ms: 45_000 });
 * // [{ live: true, answer: 'completed', … }, { live: false, answer: 'claimed', … }]
 * ```
 */
export function modelSteps(record: ModelRecord, call: StoreCall): readonly ModelStep[] {
  switch (call.method) {
    case 'claim': {
      const take: ModelStep = {
        live: record.state === 'absent' ? undefined : false,
        answer: 'claimed',
        next: { state: 'in_progress', token: call.token, ms: call.ms },
        wrote: true,
      };
      if (record.state === 'absent') return [take];
      const found = record.state === 'in_progress' ? 'in_progress' : 'completed';
      return [{ live: true, answer: found, next: record, wrote: false }, take];
    }
    case 'complete':
    case 'renew': {
      const won = call.method === 'complete' ? 'completed' : 'renewed';
      const next: ModelRecord =
        call.method === 'complete'
          ? { state: 'completed', ms: call.ms }
          : { state: 'in_progress', token: call.token, ms: call.ms };
      // The holder wins whether or not its lease ended: no other attempt can have taken the key since,
      // or the record would be that attempt's.
      if (record.state === 'absent' || (record.state === 'in_progress' && record.token === call.token)) {
        return [{ live: undefined, answer: won, next, wrote: true }];
      }
      return [
        { live: true, answer: 'lost', next: record, wrote: false },
        { live: false, answer: won, next, wrote: true },
      ];
    }
    case 'release': {
      // An ended lease is as good as absent, so releasing it changes nothing anyone can see either way.
      if (record.state === 'in_progress' && record.token === call.token) {
        return [{ live: undefined, answer: undefined, next: ABSENT, wrote: false }];
      }
      return [{ live: undefined, answer: undefined, next: record, wrote: false }];
    }
  }
}

/**
 * The model run one call after another at known instants: the rules as a store that could not get them
 * wrong, for a reader, and for tests of the model itself against `MemoryStore` on a fake clock. A lease
 * is live until its last instant (exclusive), a completion through it (inclusive), as `MemoryStore`
 * counts them; the checker accepts either at the boundary.
 *
 * @example
 * ```ts
 * const model = new SequentialStoreModel();
 * model.apply('evt_1', { method: 'claim', token: 'a', ms: 100 }, 0); // 'claimed'
 * model.apply('evt_1', { method: 'claim', token: 'b', ms: 100 }, 50); // 'in_progress'
 * model.apply('evt_1', { method: 'claim', token: 'b', ms: 100 }, 100); // 'claimed'
 * ```
 */
export class SequentialStoreModel {
  readonly #records = new Map<string, { record: ModelRecord; at: number }>();

  /**
   * Run `call` on `key` at instant `now` (ms; never earlier than the call before): its answer.
   *
   * @example
   * ```ts
   * model.apply('evt_1', { method: 'complete', token: 'a', ms: 86_400_000 }, 120); // 'completed'
   * ```
   */
  apply(key: string, call: StoreCall, now: number): StoreAnswer {
    const held = this.#records.get(key) ?? { record: ABSENT, at: now };
    const { record } = held;
    const live =
      record.state === 'absent'
        ? false
        : record.state === 'in_progress'
          ? now < held.at + record.ms
          : now <= held.at + record.ms;
    const step = modelSteps(record, call).find((each) => each.live === undefined || each.live === live);
    // modelSteps offers a step for both values of `live` whenever the answer depends on it.
    if (step === undefined) throw new Error(`the model has no step for ${call.method} here`);
    this.#records.set(key, { record: step.next, at: step.wrote ? now : held.at });
    return step.answer;
  }
}
