import type { Arbitrary } from 'fast-check';
import { collidingIds, type ShortHash } from './hash-collisions.js';

/**
 * fast-check's module, loaded by checkStore on demand (it is an optional peer dependency).
 *
 * @example
 * ```ts
 * const fc: FastCheck = await import('fast-check');
 * ```
 */
export type FastCheck = typeof import('fast-check');

/**
 * Which of its own tokens a client passes to `complete`, `release` or `renew`: the one it claimed last on
 * that key, the one before (a delivery attempt it has since given up), or a stranger's (a fresh token
 * that never claimed anything, as another attempt's would look).
 *
 * @example
 * ```ts
 * const pick: TokenPick = 'earlier';
 * ```
 */
export type TokenPick = 'latest' | 'earlier' | 'stranger';

/**
 * How a delivery ends once its work is done: complete (success), release (failure), vanish (the process
 * died), or complete and then release anyway, as an integration that releases in a `finally` block does
 * (rule 3: that release must not undo the completion).
 *
 * @example
 * ```ts
 * const ending: DeliveryEnding = 'complete, then release';
 * ```
 */
export type DeliveryEnding = 'complete' | 'release' | 'vanish' | 'complete, then release';

/**
 * One step of a client's program in a generated history. `key` indexes the history's keys; times are in
 * milliseconds, on the clock the history runs on (real or virtual).
 *
 * - `deliver`: what the core does for one delivery: claim with a fresh token and, if it got the event,
 *   work for `workMs` (renewing every third of the lease when the work outlives a third of it and the
 *   store renews), then end it ({@link DeliveryEnding}). With `pauseMs`, the process first stops that
 *   long without renewing (a stop-the-world pause, a frozen container: often past its lease); on waking
 *   it renews at once if its work is long enough to have the core's renewal timer running, and goes
 *   on: its later calls use a token another attempt may have superseded.
 * - `claim`, `complete`, `release`, `renew`: one call, with a token chosen by `token`.
 * - A `deliver` or `claim` with `atKeyEndMs` first sleeps until that offset around the end of the lease
 *   or TTL anyone wrote last on its key: a retry that arrives as the key frees up, so that several
 *   clients meet there (claims racing for an ended completion or lease).
 * - `wait`: sleep; `waitForEnd`: sleep until `offsetMs` around the end of the lease or TTL this client
 *   wrote last (to land calls on either side of that end); `vanish`: the client stops for good.
 *
 * @example
 * ```ts
 * const step: ClientStep = { kind: 'deliver', key: 0, leaseMs: 40, workMs: 10, ending: 'complete', ttlMs: 60 };
 * ```
 */
export type ClientStep =
  | {
      readonly kind: 'deliver';
      readonly key: number;
      readonly leaseMs: number;
      readonly workMs: number;
      readonly ending: DeliveryEnding;
      readonly ttlMs: number;
      readonly pauseMs?: number | undefined;
      readonly atKeyEndMs?: number | undefined;
    }
  | {
      readonly kind: 'claim';
      readonly key: number;
      readonly leaseMs: number;
      readonly atKeyEndMs?: number | undefined;
    }
  | { readonly kind: 'complete'; readonly key: number; readonly token: TokenPick; readonly ttlMs: number }
  | { readonly kind: 'release'; readonly key: number; readonly token: TokenPick }
  | { readonly kind: 'renew'; readonly key: number; readonly token: TokenPick; readonly leaseMs: number }
  | { readonly kind: 'wait'; readonly ms: number }
  | { readonly kind: 'waitForEnd'; readonly offsetMs: number }
  | { readonly kind: 'vanish' };

/**
 * A fault the hook (`StoreCheckContext.fault`) injects the `at`-th time a store awaits it in a history
 * (counting from 0): throw, or take longer than the call deadline and then go on, so that a late write
 * still lands. Every other time it resolves at once.
 *
 * @example
 * ```ts
 * const faults: PlannedFault[] = [{ at: 3, choice: 'throw' }, { at: 17, choice: 'slow' }];
 * ```
 */
export interface PlannedFault {
  readonly at: number;
  readonly choice: 'throw' | 'slow';
}

/**
 * A key of a generated history: `text` is the key without the history's unique prefix; a `long` key is
 * padded (between the prefix and `text`) to exactly the longest key the core builds, 400 characters, so
 * that keys differing only in their tail differ only in their last characters.
 *
 * @example
 * ```ts
 * const key: PlannedKey = { text: 'evt_Payment_7', long: false, family: 'case' };
 * ```
 */
export interface PlannedKey {
  readonly text: string;
  readonly long: boolean;
  /** The family of look-alike keys it was drawn from, named in the printed history. */
  readonly family: string;
  /**
   * For a key of a hash family: the hash, and which of the two ids that collide under it after the
   * history's prefix this key is (`text` is that id after an empty prefix; the runner computes it
   * after the real one, where FNV-1a's differs).
   */
  readonly collision?: { readonly hash: ShortHash; readonly side: 0 | 1 } | undefined;
}

/**
 * A generated history before it runs: its keys, the processes its clients belong to (each a UUID, the
 * first half of the core's claim tokens), one program per client (empty for a client that does
 * nothing), and the faults the hook injects.
 *
 * @example
 * ```ts
 * const plan: HistoryPlan = { keys, processes: [uuid], clients: [[{ kind: 'claim', key: 0, leaseMs: 40 }]], faults: [] };
 * ```
 */
export interface HistoryPlan {
  readonly keys: readonly PlannedKey[];
  readonly processes: readonly string[];
  readonly clients: readonly (readonly ClientStep[])[];
  readonly faults: readonly PlannedFault[];
}

/**
 * The longest key the core builds: the receiver's dedup scope and the event id (the store rules, rule 7: docs, "Writing your own store").
 *
 * @example
 * ```ts
 * const longest = 'evt_'.padEnd(MAX_KEY_LENGTH, '.');
 * ```
 */
export const MAX_KEY_LENGTH = 400;

/**
 * Families of keys that a store is known to merge (store rule 7: keys are opaque strings of up to 400
 * characters; distinct keys never share a record): each pair differs only in what one real store or
 * another has been seen to ignore. A history draws one or two families, so its clients work on keys
 * that a store keeping keys intact keeps apart, and a lossy one merges.
 */
const KEY_FAMILIES: Readonly<Record<string, readonly string[]>> = {
  // Case-insensitive collations (MySQL's default, SQL Server's, a lower-cased cache key).
  case: ['evt_Payment_7', 'evt_payment_7'],
  // Accent-insensitive collations (utf8mb4_0900_ai_ci), and Unicode normalization (NFC vs NFD).
  accents: ['événement_7', 'evenement_7', 'e\u0301ve\u0301nement_7'],
  // Truncation or a hashed prefix: keys of 400 characters that differ in their last one.
  tail: ['a', 'b'],
  // Keys that are prefixes of one another, and trailing spaces (PAD SPACE collations ignore them).
  prefix: ['evt_1', 'evt_10', 'evt_1 '],
  // Separators, spaces and Redis hash-tag braces, and what an escaping scheme would turn them into.
  separators: [
    'scope:evt_1',
    'scope_evt_1',
    'scope#evt_1',
    'scope evt_1',
    '{scope}evt_1',
    '%7Bscope%7Devt_1',
  ],
  // Any Unicode: astral characters, a character UTF-8 cannot hold alone (an unpaired surrogate) next
  // to the replacement character it would become, and NUL, where C strings end.
  unicode: ['🚀 evt_1', '🚁 evt_1', 'evt_\uD800', 'evt_\uFFFD', 'evt\u0000x', 'evt'],
};

/**
 * Families of two event ids that share a 32-bit hash after the history's prefix (src/testing/
 * hash-collisions.ts), for stores that key records by a short hash of the key: random ids would need
 * about 77,000 before two collide.
 */
const HASH_FAMILIES: Readonly<Record<string, ShortHash>> = {
  fnv1a32: 'fnv1a32',
  crc32: 'crc32',
  djb2: 'djb2',
  javaHashCode: 'javaHashCode',
};

function familyKeys(family: string): PlannedKey[] {
  const hash = HASH_FAMILIES[family];
  if (hash !== undefined) {
    return collidingIds(hash, '').map((text, side) => ({
      text,
      long: false,
      family,
      collision: { hash, side: side as 0 | 1 },
    }));
  }
  return KEY_FAMILIES[family]!.map((text) => ({ text, long: family === 'tail', family }));
}

/**
 * The key a planned key stands for after the history's prefix (a long one padded to
 * {@link MAX_KEY_LENGTH}, a colliding one recomputed for the prefix).
 *
 * @example
 * ```ts
 * plannedKey({ text: 'evt_1', long: false, family: 'prefix' }, 'h7-'); // 'h7-evt_1'
 * ```
 */
export function plannedKey(key: PlannedKey, keyPrefix: string): string {
  if (key.collision !== undefined) {
    return keyPrefix + collidingIds(key.collision.hash, keyPrefix)[key.collision.side];
  }
  return key.long
    ? keyPrefix + key.text.padStart(MAX_KEY_LENGTH - keyPrefix.length, '.')
    : keyPrefix + key.text;
}

/**
 * The families of look-alike keys, by name (each history's keys come from one or two of them).
 *
 * @example
 * ```ts
 * KEY_FAMILY_NAMES; // ['case', 'accents', 'tail', 'prefix', 'separators', 'unicode', 'fnv1a32', …]
 * ```
 */
export const KEY_FAMILY_NAMES: readonly string[] = [
  ...Object.keys(KEY_FAMILIES),
  ...Object.keys(HASH_FAMILIES),
];

/**
 * The arbitrary of history plans: `concurrency` clients, each a program of a few steps over the history's
 * keys, with leases and TTLs around `unitMs` (so that some end within the history and some do not) and
 * waits chosen to land calls just before, at and just after those ends. fast-check shrinks a failing
 * plan by dropping clients' steps, keys and faults, and by simplifying the steps that remain.
 *
 * @example
 * ```ts
 * const fc = await import('fast-check');
 * const plans = historyPlans(fc, { concurrency: 8, unitMs: 30, renews: true, faults: true });
 * ```
 */
export function historyPlans(
  fc: FastCheck,
  options: { concurrency: number; unitMs: number; renews: boolean; faults: boolean },
): Arbitrary<HistoryPlan> {
  const unit = options.unitMs;
  const third = Math.max(1, Math.round(unit / 3));
  const keysArbitrary = fc
    .uniqueArray(fc.constantFrom(...KEY_FAMILY_NAMES), { minLength: 1, maxLength: 2 })
    .chain((families) =>
      fc.shuffledSubarray(
        families.flatMap((family) => familyKeys(family)),
        { minLength: 1 },
      ),
    );
  return keysArbitrary.chain((keys) => {
    // Half the steps on the first key, so that its calls meet (races need two calls on one key); the
    // rest on any key, for the look-alikes to meet a store that merges them.
    const key = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: keys.length - 1 }));
    const lease = fc.constantFrom(unit, 2 * unit);
    // A long TTL (an hour) is what the core uses; short ones end within the history.
    const ttl = fc.constantFrom(unit, 2 * unit, Math.round(unit / 2), 3_600_000);
    const token = fc.constantFrom<TokenPick>('latest', 'latest', 'earlier', 'stranger');
    const wait = fc.oneof(
      fc.integer({ min: 0, max: 3 }),
      fc.constantFrom(third, unit - 1, unit, unit + 1, 2 * unit - 1, 2 * unit + 1, Math.round(unit * 1.5)),
    );
    const offset = fc.constantFrom(
      -Math.round(unit / 5),
      -Math.round(unit / 10),
      -2,
      -1,
      0,
      1,
      2,
      Math.round(unit / 10),
    );
    // One in three deliveries and claims starts when it is issued, two as its key frees up: most of
    // those just after its end, where two of them meet on the same instant and race for the record.
    const atKeyEnd = fc.oneof(
      { weight: 1, arbitrary: fc.constant(undefined) },
      { weight: 2, arbitrary: fc.constantFrom(1, 1, 1, 1, 2, 0, -1) },
    );
    const steps: Arbitrary<ClientStep>[] = [
      fc.record({
        kind: fc.constant('deliver' as const),
        key,
        leaseMs: lease,
        workMs: fc.constantFrom(0, third, unit, 2 * unit),
        ending: fc.constantFrom<DeliveryEnding>(
          'complete',
          'complete',
          'release',
          'vanish',
          'complete, then release',
          'complete, then release',
        ),
        ttlMs: ttl,
        // Two in five none; else frozen just past a lease of one unit, of two, or past another attempt's
        // whole lease that began as the first ended (the attempt that superseded this one has ended too).
        pauseMs: fc.constantFrom(0, 0, unit + 2, 2 * unit + 2, 3 * unit + 2),
        atKeyEndMs: atKeyEnd,
      }),
      fc.record({ kind: fc.constant('claim' as const), key, leaseMs: lease, atKeyEndMs: atKeyEnd }),
      fc.record({ kind: fc.constant('complete' as const), key, token, ttlMs: ttl }),
      fc.record({ kind: fc.constant('release' as const), key, token }),
      fc.record({ kind: fc.constant('wait' as const), ms: wait }),
      fc.record({ kind: fc.constant('waitForEnd' as const), offsetMs: offset }),
    ];

    if (options.renews) {
      steps.push(fc.record({ kind: fc.constant('renew' as const), key, token, leaseMs: lease }));
    }
    const weighted = fc.oneof(
      { weight: 4, arbitrary: steps[0]! },
      { weight: 3, arbitrary: steps[1]! },
      { weight: 2, arbitrary: steps[2]! },
      { weight: 1, arbitrary: steps[3]! },
      { weight: 3, arbitrary: steps[4]! },
      { weight: 2, arbitrary: steps[5]! },
      ...(steps[6] ? [{ weight: 2, arbitrary: steps[6] }] : []),
      { weight: 1, arbitrary: fc.constant<ClientStep>({ kind: 'vanish' }) },
    );
    // A few faults per history, anywhere among the hook calls of a typical history (a store awaits it
    // once or twice per call). Slow ones are rarer: each holds its client past the deadline, and a
    // history with many would take seconds.
    const fault = fc.record({
      at: fc.nat({ max: 40 }),
      choice: fc.constantFrom<PlannedFault['choice']>('throw', 'throw', 'throw', 'slow'),
    });
    return fc.record({
      keys: fc.constant(keys),
      // Two or three processes: clients of one process share its UUID, so their tokens differ only in
      // their tail, as two deliveries' tokens of one receiver do.
      processes: fc.uniqueArray(fc.uuid(), { minLength: 2, maxLength: 3 }),
      // Always `concurrency` clients; shrinking empties the programs of those a failure does not need.
      clients: fc.array(fc.array(weighted, { maxLength: 6 }), {
        minLength: options.concurrency,
        maxLength: options.concurrency,
      }),
      faults: options.faults ? fc.array(fault, { maxLength: 3 }) : fc.constant([]),
    });
  });
}
