import type { KeyObject } from 'node:crypto';
import { nodeCrypto } from './node-builtins.js';
import { toBytes } from './raw-body.js';
import { importKey } from './signature.js';
import type { InboxEntry } from './types.js';

/**
 * The labels every inbox MAC is computed under. Fixed: changing one refuses every entry that waits in
 * a queue (retries, days-old dead letters). Each keeps one kind of MAC apart from the others, and all
 * of them apart from the service's signatures, which are keyed with the webhook secret itself.
 */
const KEY_LABEL = 'service-webhooks inbox key v1';
const ENTRY_LABEL = 'service-webhooks inbox entry v1';
const ATTEMPT_LABEL = 'service-webhooks inbox attempt v1';

/** `v1.` and 64 lowercase hex digits: the version says how the MAC was computed. */
const SEAL_PREFIX = 'v1.';
const SEAL_LENGTH = SEAL_PREFIX.length + 64;
const HEX = /^[0-9a-f]{64}$/;

/**
 * What a worker may trust of an entry: `sealed` (the door wrote it, and no field the worker reads was
 * changed since), `unsealed` (no seal at all: a door of a version before seals, or a forgery), or
 * `forged` (a seal that does not hold: edited, made up, or from a key no longer listed).
 */
export type SealCheck = 'sealed' | 'unsealed' | 'forged';

/**
 * The event and the fields beside it as one unambiguous string: JSON of a fixed array, with every
 * object's keys sorted. Not the stored text: engines keep entries in their own form (PostgreSQL's
 * jsonb reorders keys, an SQS body is re-serialised), so the MAC covers the values the worker will
 * read, whose canonical JSON is the same on both sides of any JSON round trip. Throws on what JSON
 * cannot hold (a `bigint`), which no entry read from a queue contains.
 */
export function canonicalJson(value: unknown): string {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const record = value as Record<string, unknown>;
  let text = '{';
  for (const key of Object.keys(record).sort()) {
    const field = record[key];
    // Left out as JSON.stringify leaves them out: a queue's JSON never holds them.
    if (field === undefined || typeof field === 'function' || typeof field === 'symbol') continue;
    text += `${text.length > 1 ? ',' : ''}${JSON.stringify(key)}:${canonicalJson(field)}`;
  }
  return `${text}}`;
}

/**
 * What an entry's seal is computed over: everything of the entry a worker reads. The tenant is added
 * only when there is one, so that the entries of a receiver of one registration, some waiting in queues
 * since before tenants, keep the text they were sealed over.
 */
function entryText(entry: InboxEntry): string {
  const fields = [ENTRY_LABEL, entry.event, entry.receivedAt, entry.secretIndex, entry.traceparent ?? null];
  if (entry.tenant !== undefined) fields.push(entry.tenant);
  return canonicalJson(fields);
}

/** What an attempt's seal is computed over: the attempt, bound to the entry by the entry's seal. */
function attemptText(seal: string, attempt: number): string {
  return canonicalJson([ATTEMPT_LABEL, seal, attempt]);
}

function toSeal(digest: Uint8Array): string {
  let hex = SEAL_PREFIX;
  for (const byte of digest) hex += byte.toString(16).padStart(2, '0');
  return hex;
}

/** The 32 bytes of a seal, or `undefined` for anything that is not one. */
function digestOf(seal: unknown): Uint8Array | undefined {
  if (typeof seal !== 'string' || seal.length !== SEAL_LENGTH || !seal.startsWith(SEAL_PREFIX))
    return undefined;
  const hex = seal.slice(SEAL_PREFIX.length);
  if (!HEX.test(hex)) return undefined;
  const digest = new Uint8Array(32);
  for (let i = 0; i < 32; i++) digest[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return digest;
}

/** HMAC-SHA256 with each key, node:crypto's or Web Crypto's: one list of MACs, the signing key's first. */
interface MacKeys {
  macs(text: string): Promise<Uint8Array[]>;
}

/** Keys are derived on first use: every receiver has an `InboxSeal`, most never use it (no inbox). */
class NodeMacKeys implements MacKeys {
  readonly #sources: readonly string[];
  readonly #crypto: NonNullable<typeof nodeCrypto>;
  #keys: readonly KeyObject[] | undefined;

  constructor(sources: readonly string[], crypto: NonNullable<typeof nodeCrypto>) {
    this.#crypto = crypto;
    this.#sources = sources;
  }

  async macs(text: string): Promise<Uint8Array[]> {
    const crypto = this.#crypto;
    this.#keys ??= this.#sources.map((source) =>
      crypto.createSecretKey(crypto.createHmac('sha256', source).update(KEY_LABEL).digest()),
    );
    return this.#keys.map((key) => crypto.createHmac('sha256', key).update(text, 'utf8').digest());
  }
}

class WebMacKeys implements MacKeys {
  readonly #sources: readonly string[];
  #keys: Promise<CryptoKey[]> | undefined;

  constructor(sources: readonly string[]) {
    this.#sources = sources;
  }

  async macs(text: string): Promise<Uint8Array[]> {
    this.#keys ??= Promise.all(
      this.#sources.map(async (source) => {
        const label = toBytes(KEY_LABEL) as Uint8Array<ArrayBuffer>;
        const derived = await crypto.subtle.sign('HMAC', await importKey(source), label);
        return crypto.subtle.importKey('raw', derived, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
      }),
    );
    const bytes = toBytes(text) as Uint8Array<ArrayBuffer>;
    const keys = await this.#keys;
    return Promise.all(keys.map(async (key) => new Uint8Array(await crypto.subtle.sign('HMAC', key, bytes))));
  }
}

/** Equal bytes, in a time that depends on the length only. */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i]! ^ b[i]!;
  return difference === 0;
}

/**
 * The inbox's seals: the door seals each entry it writes, and a worker runs handlers only on an entry
 * whose seal holds, so that whoever can write to the queue (an IAM or SQL grant, often broader than
 * holding the webhook secret) cannot make handlers act on an event the service never sent.
 *
 * Keyed with keys derived from `sources` (the `inboxKey` option, or the webhook secrets):
 * HMAC-SHA256(source, a fixed label), so the key that seals entries is never a key the service signs
 * deliveries with. The first source seals; every source's key is tried when checking, all of them
 * each time, so the time taken does not say which one held. Rotating a source out therefore refuses
 * the entries still waiting under it.
 */
export class InboxSeal {
  readonly #keys: MacKeys;

  /** `crypto`: node:crypto where there is one, Web Crypto where not (a test passes `undefined` for it). */
  constructor(sources: readonly string[], crypto: typeof nodeCrypto = nodeCrypto) {
    this.#keys = crypto ? new NodeMacKeys(sources, crypto) : new WebMacKeys(sources);
  }

  /** The entry's seal, with the first key. */
  async seal(entry: InboxEntry): Promise<string> {
    return toSeal((await this.#keys.macs(entryText(entry)))[0]!);
  }

  /** The seal of `attempt` for the entry sealed `seal`: an engine that carries the attempt in the message writes it. */
  async sealAttempt(seal: string, attempt: number): Promise<string> {
    return toSeal((await this.#keys.macs(attemptText(seal, attempt)))[0]!);
  }

  /**
   * Whether the entry is as the door sealed it, and, when it carries an attempt other than the first,
   * whether that attempt was sealed for it (by a worker, through {@link sealAttempt}).
   */
  async check(entry: InboxEntry): Promise<SealCheck> {
    if (entry.seal === undefined) return 'unsealed';
    const expected = digestOf(entry.seal);
    if (!expected) return 'forged';
    let text: string;
    try {
      text = entryText(entry);
    } catch {
      return 'forged';
    }
    if (!(await this.#holds(text, expected))) return 'forged';
    const { attempt } = entry;
    if (attempt === undefined || attempt === 1) return 'sealed';
    const attemptExpected = digestOf(entry.attemptSeal);
    if (!attemptExpected) return 'forged';
    return (await this.#holds(attemptText(entry.seal, attempt), attemptExpected)) ? 'sealed' : 'forged';
  }

  async #holds(text: string, expected: Uint8Array): Promise<boolean> {
    // Every key is compared, so the time taken does not reveal which one matched.
    let held = false;
    for (const digest of await this.#keys.macs(text)) held = sameBytes(digest, expected) || held;
    return held;
  }
}
