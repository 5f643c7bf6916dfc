import type { KeyObject } from 'node:crypto';
import { HmacSha256, SCRATCH_BODY_BYTES } from './hmac-sha256.js';
import { nodeCrypto } from './node-builtins.js';
import { toBytes } from './raw-body.js';
import { secretList } from './secrets.js';
import type { HeadersInput, RawBody } from './types.js';

/** The header the service signs deliveries with. */
export const SIGNATURE_HEADER = 'x-service-signature';

const PREFIX = 'sha256=';
const HEADER_LENGTH = PREFIX.length + 64;

/**
 * The result of checking a signature: which secret matched, or why none did.
 *
 * @example
 * ```ts
 * const check = verifySignature(body, header, secrets);
 * if (check.ok && check.secretIndex > 0) console.warn('signed with an old secret');
 * ```
 */
export type SignatureCheck =
  | { readonly ok: true; readonly secretIndex: number }
  | { readonly ok: false; readonly code: 'missing_signature' | 'invalid_signature' };

const MISSING: SignatureCheck = Object.freeze({ ok: false, code: 'missing_signature' });
const INVALID: SignatureCheck = Object.freeze({ ok: false, code: 'invalid_signature' });
const MATCHES: readonly SignatureCheck[] = Array.from({ length: 16 }, (_, secretIndex) =>
  Object.freeze({ ok: true, secretIndex }),
);

// biome-ignore format: the parentheses make V8 compile it with the module, not on the first delivery
const matched = (function matched(secretIndex: number): SignatureCheck {
  return MATCHES[secretIndex] ?? { ok: true, secretIndex };
});

/** Each character code's hex digit value, or -1: lowercase only, as the service documents. */
const HEX_VALUES = new Int8Array(128).fill(-1);
for (let digit = 0; digit < 16; digit++) HEX_VALUES['0123456789abcdef'.charCodeAt(digit)] = digit;

/**
 * Decode `sha256=<64 lowercase hex>` into the 32 digest bytes (into `digest`, a fresh array unless
 * given), or `undefined` for anything else. Length is checked first so an 8 KiB header costs nothing;
 * uppercase hex is refused because the service documents lowercase and accepting both would give one
 * digest two spellings.
 */
// biome-ignore format: the parentheses make V8 compile it with the module, not on the first delivery
const parseSignatureHeader = (function parseSignatureHeader(header: string, digest = new Uint8Array(32)): Uint8Array | undefined {
  if (header.length !== HEADER_LENGTH || !header.startsWith(PREFIX)) return undefined;
  // Any invalid character makes `invalid` negative; the loop does not branch per character.
  let invalid = 0;
  for (let i = 0, at = PREFIX.length; i < 32; i++, at += 2) {
    const high = hexValue(header.charCodeAt(at));
    const low = hexValue(header.charCodeAt(at + 1));
    invalid |= high | low;
    digest[i] = (high << 4) | low;
  }
  return invalid < 0 ? undefined : digest;
});

// biome-ignore format: the parentheses make V8 compile it with the module, not on the first delivery
const hexValue = (function hexValue(code: number): number {
  return code < 128 ? HEX_VALUES[code]! : -1;
});

/** Lowercase hex of bytes: the Web Crypto paths' digests (node:crypto gives hex itself). */
export function toHex(bytes: Uint8Array): string {
  let hex = '';
  for (const byte of bytes) hex += byte.toString(16).padStart(2, '0');
  return hex;
}

/** One header value, whichever way the framework hands headers over; repeated values count as malformed. */
// biome-ignore format: the parentheses make V8 compile it with the module, not on the first delivery
export const readHeader = (function readHeader(headers: HeadersInput | null | undefined, name: string): string | undefined {
  // Adapters pass what their platform gives: Lambda events carry `null` values, and a broken one may
  // pass no headers at all. Anything but a string (or a list of them) counts as absent.
  if (typeof headers !== 'object' || headers === null) return undefined;
  if (typeof headers.get === 'function')
    return (headers as { get(n: string): string | null }).get(name) ?? undefined;
  const record = headers as Readonly<Record<string, unknown>>;
  let value = Object.hasOwn(record, name) ? record[name] : undefined;
  if (value === undefined) {
    for (const key of Object.keys(record)) {
      if (key.length === name.length && key.toLowerCase() === name) {
        value = record[key];
        break;
      }
    }
  }
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) return undefined;
  const values = value.filter((item): item is string => typeof item === 'string');
  if (values.length === 0) return undefined;
  return values.length === 1 ? values[0] : values.join(',');
});

function requireNodeCrypto(what: string): NonNullable<typeof nodeCrypto> {
  if (!nodeCrypto) {
    throw new Error(`${what} needs node:crypto, which this runtime lacks; use ${what}Web (Web Crypto) here.`);
  }
  return nodeCrypto;
}

/** A verifier bound to a fixed list of secrets, their keys prepared once. */
export interface Verifier {
  check(body: RawBody, header: string | undefined): SignatureCheck | Promise<SignatureCheck>;
}

/**
 * Build the fastest verifier this runtime allows: node:crypto with prepared key objects (synchronous),
 * or Web Crypto where node:crypto does not exist. Both give identical answers.
 */
export function createVerifier(secrets: readonly string[]): Verifier {
  return nodeCrypto ? new NodeVerifier(secrets, nodeCrypto) : createWebVerifier(secrets);
}

/**
 * The node:crypto verifier. A class, not a closure per receiver: V8 ties the optimized code of the
 * delivery path to the functions it calls, and a closure's code was thrown away with its receiver and
 * compiled again for the next one.
 */
class NodeVerifier implements Verifier {
  readonly #secrets: readonly string[];
  readonly #crypto: NonNullable<typeof nodeCrypto>;
  /**
   * The secrets' padded key blocks for the one-shot path (bodies of bytes up to `SCRATCH_BODY_BYTES`),
   * made at the first such body; `null` where node:crypto has no one-shot `hash`.
   */
  #oneShot: readonly HmacSha256[] | null | undefined;
  // Key objects save converting the secret on every `createHmac` (strings and bodies past the scratch),
  // but the first one made in a process costs more than that conversion (node:crypto's key code loads):
  // a cold start's first such delivery, and a one-shot verifySignature, key their HMACs with the secret
  // strings (the same keys, as UTF-8), and the key objects are made at the second.
  #keys: readonly KeyObject[] | undefined;
  #verified = 0;
  // Reused by every call: this verifier decodes, computes, compares and is done within one synchronous call.
  readonly #digestBytes = new Uint8Array(32);
  readonly #macBytes = new Uint8Array(32);

  constructor(secrets: readonly string[], crypto: NonNullable<typeof nodeCrypto>) {
    this.#crypto = crypto;
    this.#secrets = secrets;
  }

  check(body: RawBody, header: string | undefined): SignatureCheck {
    if (header === undefined) return MISSING;
    const expected = parseSignatureHeader(header, this.#digestBytes);
    if (!expected) return INVALID;
    const crypto = this.#crypto;
    const bytes = typeof body === 'string' ? undefined : toBytes(body);
    const oneShot =
      bytes !== undefined && bytes.byteLength <= SCRATCH_BODY_BYTES ? this.#oneShotKeys() : undefined;
    const using = oneShot ? undefined : this.#hmacKeys();
    // Every secret is tried, so the time taken does not reveal which one matched.
    let found = -1;
    for (let i = 0; i < this.#secrets.length; i++) {
      let digest: Uint8Array;
      if (oneShot) {
        oneShot[i]!.digestInto(bytes!, this.#macBytes);
        digest = this.#macBytes;
      } else {
        const hmac = crypto.createHmac('sha256', using![i]!);
        digest = (bytes === undefined ? hmac.update(body as string, 'utf8') : hmac.update(bytes)).digest();
      }
      if (crypto.timingSafeEqual(digest, expected) && found < 0) found = i;
    }
    return found < 0 ? INVALID : matched(found);
  }

  #oneShotKeys(): readonly HmacSha256[] | undefined {
    if (this.#oneShot === undefined) {
      const crypto = this.#crypto;
      const keys = this.#secrets.map((secret) => HmacSha256.prepare(crypto, toBytes(secret)));
      this.#oneShot = keys.every((key) => key !== undefined) ? keys : null;
    }
    return this.#oneShot ?? undefined;
  }

  #hmacKeys(): readonly (KeyObject | string)[] {
    const crypto = this.#crypto;
    this.#keys ??=
      this.#verified++ === 0
        ? undefined
        : this.#secrets.map((secret) => crypto.createSecretKey(secret, 'utf8'));
    return this.#keys ?? this.#secrets;
  }
}

function createWebVerifier(secrets: readonly string[]): Verifier {
  let keys: Promise<CryptoKey[]> | undefined;
  const check = async (body: RawBody, header: string | undefined): Promise<SignatureCheck> => {
    if (header === undefined) return MISSING;
    const expected = parseSignatureHeader(header);
    if (!expected) return INVALID;
    keys ??= Promise.all(secrets.map(importKey));
    const bytes = toBytes(body);
    // subtle.verify compares in constant time; all secrets are tried, as on the node:crypto path.
    const results = await Promise.all(
      (await keys).map((key) =>
        crypto.subtle.verify(
          'HMAC',
          key,
          expected as Uint8Array<ArrayBuffer>,
          bytes as Uint8Array<ArrayBuffer>,
        ),
      ),
    );
    const found = results.indexOf(true);
    return found < 0 ? INVALID : matched(found);
  };
  return { check };
}

/** An HMAC-SHA256 key for Web Crypto; the dedup scope's fingerprint uses it too. */
export function importKey(secret: string): Promise<CryptoKey> {
  const raw = toBytes(secret) as Uint8Array<ArrayBuffer>;
  return crypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
}

/**
 * Check an `x-service-signature` value against the exact body received, synchronously, with node:crypto.
 * Never throws for bad input: a missing or malformed header is a result, not an exception. An empty or
 * blank secret is a mistake in the setup, not in the input, and throws a `ConfigurationError`.
 *
 * @param body the raw bytes received, or the exact string
 * @param header the header value, `undefined` when absent
 * @param secrets the secret, or every secret accepted while rotating
 * @example
 * ```ts
 * import { verifySignature } from 'service-webhooks';
 * const check = verifySignature(rawBody, req.headers['x-service-signature'], process.env.WEBHOOK_SECRET!);
 * if (!check.ok) return res.status(401).end();
 * ```
 */
export function verifySignature(
  body: RawBody,
  header: string | undefined,
  secrets: string | readonly string[],
): SignatureCheck {
  const crypto = requireNodeCrypto('verifySignature');
  return new NodeVerifier(secretList(secrets), crypto).check(body, header);
}

/**
 * The same check as {@link verifySignature} with Web Crypto, for runtimes without node:crypto (edge
 * functions, Workers, browsers). Same answers, asynchronously.
 *
 * @example
 * ```ts
 * const check = await verifySignatureWeb(await request.arrayBuffer(), request.headers.get('x-service-signature') ?? undefined, env.SECRET);
 * ```
 */
export function verifySignatureWeb(
  body: RawBody,
  header: string | undefined,
  secrets: string | readonly string[],
): Promise<SignatureCheck> {
  try {
    return Promise.resolve(createWebVerifier(secretList(secrets)).check(body, header));
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * The `x-service-signature` value for a body: `sha256=` and the lowercase hex HMAC-SHA256 keyed with
 * the secret. Use it to sign test deliveries.
 *
 * @example
 * ```ts
 * const body = JSON.stringify(event);
 * await fetch(url, { method: 'POST', body, headers: { 'x-service-signature': signPayload(body, secret) } });
 * ```
 */
export function signPayload(body: RawBody, secret: string): string {
  const crypto = requireNodeCrypto('signPayload');
  const hmac = crypto.createHmac('sha256', secretList(secret)[0]!);
  return (
    PREFIX + (typeof body === 'string' ? hmac.update(body, 'utf8') : hmac.update(toBytes(body))).digest('hex')
  );
}

/**
 * {@link signPayload} with Web Crypto, for runtimes without node:crypto.
 *
 * @example
 * ```ts
 * const header = await signPayloadWeb(body, env.WEBHOOK_SECRET);
 * ```
 */
export async function signPayloadWeb(body: RawBody, secret: string): Promise<string> {
  const key = await importKey(secretList(secret)[0]!);
  const mac = await crypto.subtle.sign('HMAC', key, toBytes(body) as Uint8Array<ArrayBuffer>);
  return PREFIX + toHex(new Uint8Array(mac));
}
