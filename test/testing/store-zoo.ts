/**
 * A zoo of subtly broken stores: each one a realistic bug a store author makes, on a store that is
 * otherwise right. They share one implementation over a small in-memory "backend" whose every request
 * is a round trip (a macrotask, as network I/O is) and goes through the checker's fault hook, so calls
 * overlap as they do against a real database, and a backend can fail or be slow.
 *
 * Used by store-zoo.test.ts, to show what storeConformanceSuite misses and that checkStore misses none.
 */
import type { ClaimResult, CompleteResult, IdempotencyStore, RenewResult } from 'service-webhooks';
import { StoreUnavailableError } from 'service-webhooks';
import { type ShortHash, shortHash } from '../../src/testing/hash-collisions.js';

/** Each a realistic bug a store author makes; {@link ZooFlaw} is derived from this one list. */
export const ZOO_FLAWS = [
  /** Reads the record, then writes it in a second round trip: two claims can both see it free. */
  'claim reads then writes across an await',
  /** A completed record keeps its token, and release deletes whatever record holds the caller's token. */
  'release undoes a completion made with the same token',
  /** "Margin for clock skew", applied on the wrong side: the lease is counted as ended 10% early. */
  'lease counted as ended a little early',
  /** The completion's TTL counts from the claim (the record's creation time), not from the completion. */
  "completion's TTL counted from the claim",
  /** Renew hands leaseMs to a seconds-based expiry (Redis EX instead of PX): 1,000 times too long. */
  'renewal in the wrong unit',
  /** Keys compared as a case- and accent-insensitive collation compares them (utf8mb4_0900_ai_ci). */
  'keys compared case- and accent-insensitively',
  /** "Fail open": a claim whose backend request threw answers 'claimed', so no event is ever dropped. */
  "answers 'claimed' when the backend threw",
  /** Records keyed by a 32-bit hash of the key ("keys are too long for the backend"): FNV-1a. */
  'keys hashed to 32 bits (FNV-1a)',
  /** The same with CRC-32 (zlib's, a favourite for "short, stable" keys). */
  'keys hashed to 32 bits (CRC-32)',
  /** The same with djb2. */
  'keys hashed to 32 bits (djb2)',
  /** The same with Java's String.hashCode. */
  'keys hashed to 32 bits (Java hashCode)',
  /**
   * A claim that finds an ended completion deletes the key in one request (lazy expiry), then inserts
   * if absent in another: the delete is not conditional on the record it read, so of two claims that
   * met the ended completion, the second deletes the first's fresh claim and takes the key too.
   */
  'claim deletes an ended completion unconditionally, then inserts',
  /**
   * A completion over a record its token does not hold (ended, or absent) is inserted with the
   * caller's token (the update path clears it, the insert path forgot to), and release deletes any
   * record with the caller's token: a late release by a superseded attempt undoes the completion.
   */
  "a completion it did not hold keeps the caller's token, which release deletes",
  /**
   * A renew over another attempt's ended lease extends it (PEXPIRE) but keeps that attempt's token: the
   * renewer does not hold the key it was told it renewed, and the ended attempt still does.
   */
  "renew over another attempt's ended lease keeps that attempt's token",
] as const;

export type ZooFlaw = (typeof ZOO_FLAWS)[number];

/** The stores that key records by a 32-bit hash of the key, and the hash each uses. */
export const HASHED_KEYS: Readonly<Partial<Record<ZooFlaw, ShortHash>>> = {
  'keys hashed to 32 bits (FNV-1a)': 'fnv1a32',
  'keys hashed to 32 bits (CRC-32)': 'crc32',
  'keys hashed to 32 bits (djb2)': 'djb2',
  'keys hashed to 32 bits (Java hashCode)': 'javaHashCode',
};

/**
 * Bugs that show only in one interleaving around an end of a lease or TTL, or with a stale token: an
 * outside zoo's three that checkStore's defaults missed before its histories aimed at them (issue 45).
 */
export const SUBTLE_FLAWS: readonly ZooFlaw[] = [
  'claim deletes an ended completion unconditionally, then inserts',
  "a completion it did not hold keeps the caller's token, which release deletes",
  "renew over another attempt's ended lease keeps that attempt's token",
];

interface ZooRecord {
  readonly state: 'in_progress' | 'completed';
  readonly token: string | undefined;
  /** The store clock's instant the record ends (a lease: exclusive; a completion: inclusive). */
  readonly expiresAt: number;
  /** When the record was first claimed (kept through renewals; the TTL bug reads it). */
  readonly claimedAt: number;
}

export interface ZooStoreOptions {
  readonly flaw?: ZooFlaw | undefined;
  /** The store's clock; performance.now() by default. */
  readonly now?: (() => number) | undefined;
  /** Awaited before each backend request and after its answer (the checker's fault hook). */
  readonly fault?: ((operation: string) => Promise<void>) | undefined;
}

/**
 * What one backend request does with the record it finds at `now`: the record to write (`null`
 * deletes it; none leaves it), and the answer.
 */
type Decide<T> = (
  record: ZooRecord | undefined,
  now: number,
) => { write?: ZooRecord | null | undefined; answer: T };

const roundTrip = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The backend: records by key, each request a round trip; `atomically` decides and writes in one. */
class Backend {
  readonly #records = new Map<string, ZooRecord>();

  constructor(
    readonly now: () => number,
    readonly fault: (operation: string) => Promise<void>,
    readonly keyOf: (key: string) => string,
  ) {}

  /** One request that reads and writes in one step (a conditional write, a Lua script). */
  async atomically<T>(operation: string, key: string, decide: Decide<T>): Promise<T> {
    await this.fault(`${operation} request`);
    await roundTrip();
    const stored = this.keyOf(key);
    const { write, answer } = decide(this.#records.get(stored), this.now());
    if (write === null) this.#records.delete(stored);
    else if (write !== undefined) this.#records.set(stored, write);
    await roundTrip();
    await this.fault(`${operation} reply`);
    return answer;
  }
}

/**
 * The key with `%` and unpaired surrogates escaped, as the built-in stores write keys (UTF-8 would turn
 * every unpaired surrogate into U+FFFD): so a hashed store merges keys only where their hashes collide.
 */
function intact(key: string): string {
  return key.replace(
    /%|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g,
    (unit) => `%u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** Whether a record still counts at `now`: a lease until its end (exclusive), a completion through it. */
function live(record: ZooRecord | undefined, now: number): record is ZooRecord {
  if (record === undefined) return false;
  return record.state === 'in_progress' ? now < record.expiresAt : now <= record.expiresAt;
}

/**
 * A store over the zoo's backend: right (no flaw), or with one flaw. Every backend failure is thrown as
 * StoreUnavailableError, except where the flaw is to swallow it.
 */
export class ZooStore implements IdempotencyStore {
  readonly #flaw: ZooFlaw | undefined;
  readonly #backend: Backend;

  constructor(options: ZooStoreOptions = {}) {
    this.#flaw = options.flaw;
    const collate = (key: string) => key.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
    const hash = this.#flaw === undefined ? undefined : HASHED_KEYS[this.#flaw];
    this.#backend = new Backend(
      options.now ?? (() => performance.now()),
      options.fault ?? (async () => {}),
      this.#flaw === 'keys compared case- and accent-insensitively'
        ? collate
        : hash !== undefined
          ? (key) => shortHash(hash, intact(key)).toString(16)
          : (key) => key,
    );
  }

  async claim(key: string, token: string, leaseMs: number): Promise<ClaimResult> {
    const lease = this.#flaw === 'lease counted as ended a little early' ? leaseMs * 0.9 : leaseMs;
    try {
      if (this.#flaw === 'claim reads then writes across an await') {
        const found = await this.#call('claim', key, (record, now) => ({
          answer: live(record, now) ? record.state : undefined,
        }));
        if (found !== undefined) return found === 'in_progress' ? 'in_progress' : 'completed';
        return await this.#call('claim', key, (_, now) => ({
          write: { state: 'in_progress', token, expiresAt: now + lease, claimedAt: now },
          answer: 'claimed' as const,
        }));
      }
      if (this.#flaw === 'claim deletes an ended completion unconditionally, then inserts') {
        const found = await this.#call('claim', key, (record, now) => {
          const found: ZooRecord | undefined = record;
          if (live(found, now)) return { answer: found.state };
          return { answer: record?.state === 'completed' ? ('ended' as const) : undefined };
        });
        if (found === 'in_progress' || found === 'completed') return found;
        // Lazy expiry: the ended completion is deleted by key, whatever the key holds by now.
        if (found === 'ended') await this.#call('claim', key, () => ({ write: null, answer: undefined }));
        return await this.#call('claim', key, (record, now): { write?: ZooRecord; answer: ClaimResult } => {
          if (live(record, now))
            return { answer: record.state === 'in_progress' ? 'in_progress' : 'completed' };
          return {
            write: { state: 'in_progress', token, expiresAt: now + lease, claimedAt: now },
            answer: 'claimed',
          };
        });
      }
      return await this.#call('claim', key, (record, now): { write?: ZooRecord; answer: ClaimResult } => {
        if (live(record, now))
          return { answer: record.state === 'in_progress' ? 'in_progress' : 'completed' };
        return {
          write: { state: 'in_progress', token, expiresAt: now + lease, claimedAt: now },
          answer: 'claimed',
        };
      });
    } catch (error) {
      if (this.#flaw === "answers 'claimed' when the backend threw") return 'claimed';
      throw error;
    }
  }

  async complete(key: string, token: string, ttlMs: number): Promise<CompleteResult> {
    return this.#call('complete', key, (record, now) => {
      const holder = record?.state === 'in_progress' && record.token === token;
      const keepsToken =
        this.#flaw === 'release undoes a completion made with the same token' ||
        (!holder &&
          this.#flaw === "a completion it did not hold keeps the caller's token, which release deletes");
      if (!holder && live(record, now)) return { answer: 'lost' as const };
      const from =
        holder && this.#flaw === "completion's TTL counted from the claim" ? record.claimedAt : now;
      return {
        write: {
          state: 'completed',
          token: keepsToken ? token : undefined,
          expiresAt: from + ttlMs,
          claimedAt: record?.claimedAt ?? now,
        },
        answer: 'completed' as const,
      };
    });
  }

  async release(key: string, token: string): Promise<void> {
    await this.#call('release', key, (record) => {
      const mine =
        record?.token === token &&
        (record.state === 'in_progress' ||
          this.#flaw === 'release undoes a completion made with the same token' ||
          this.#flaw === "a completion it did not hold keeps the caller's token, which release deletes");
      return { write: mine ? null : undefined, answer: undefined };
    });
  }

  async renew(key: string, token: string, leaseMs: number): Promise<RenewResult> {
    const lease =
      this.#flaw === 'renewal in the wrong unit'
        ? leaseMs * 1000
        : this.#flaw === 'lease counted as ended a little early'
          ? leaseMs * 0.9
          : leaseMs;
    return this.#call('renew', key, (record, now) => {
      const holder = record?.state === 'in_progress' && record.token === token;
      if (!holder && live(record, now)) return { answer: 'lost' as const };
      const keepsOther =
        !holder &&
        record?.state === 'in_progress' &&
        this.#flaw === "renew over another attempt's ended lease keeps that attempt's token";
      return {
        write: {
          state: 'in_progress',
          token: keepsOther ? record.token : token,
          expiresAt: now + lease,
          claimedAt: holder ? record.claimedAt : now,
        },
        answer: 'renewed' as const,
      };
    });
  }

  async #call<T>(operation: string, key: string, decide: Decide<T>): Promise<T> {
    try {
      return await this.#backend.atomically(operation, key, decide);
    } catch (cause) {
      throw new StoreUnavailableError(`ZooStore could not ${operation}: ${String(cause)}`, { cause });
    }
  }
}
