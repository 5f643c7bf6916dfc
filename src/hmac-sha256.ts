import type * as NodeCrypto from 'node:crypto';

/** SHA-256's block size: an HMAC key is padded (or first hashed) to one block. */
const BLOCK_BYTES = 64;
const DIGEST_BYTES = 32;
/**
 * The longest body hashed through the shared scratch buffer. A longer one goes to `createHmac`, whose
 * fixed cost (about 1 µs) is lost in its hashing time, and the scratch stays small: it would otherwise
 * keep a copy of the largest body ever received.
 */
export const SCRATCH_BODY_BYTES = 16 * 1024;

/** node:crypto's one-shot `hash` (Node >= 20.12); 'binary' is latin1: one character per byte. */
type OneShotHash = (algorithm: string, data: Uint8Array, outputEncoding: 'binary') => string;

/**
 * The inner block (`K ^ ipad`) and then a body: one buffer for the whole process, since a digest is
 * made and used within one synchronous call, and zeroed again before that call returns. Made on first
 * use.
 */
let scratch: Uint8Array | undefined;

/**
 * HMAC-SHA256 (RFC 2104) of one secret, as two one-shot SHA-256 digests with the padded key blocks
 * prepared once: `H((K ^ opad) || H((K ^ ipad) || body))`. `createHmac` per delivery cost the receiver
 * about 1 µs more than this at 300 B and 2 KiB (OpenSSL's per-call HMAC set-up, a native object and its
 * weak handle, a Buffer with its own ArrayBuffer for the digest), which is more than the rest of the
 * signature check. The answer is the same: the tests hold it to `createHmac` on random keys and bodies.
 */
export class HmacSha256 {
  readonly #hash: OneShotHash;
  readonly #innerBlock = new Uint8Array(BLOCK_BYTES);
  /** `K ^ opad`, then room for the inner digest: the outer hash's whole input. */
  readonly #outer = new Uint8Array(BLOCK_BYTES + DIGEST_BYTES);

  /**
   * A prepared key, or `undefined` where node:crypto has no one-shot `hash` (`createHmac` must do).
   * `key` is the secret's bytes (UTF-8, as `createHmac` takes a string key).
   */
  static prepare(crypto: typeof NodeCrypto, key: Uint8Array): HmacSha256 | undefined {
    const hash = (crypto as { hash?: OneShotHash }).hash;
    return typeof hash === 'function' ? new HmacSha256(hash, crypto, key) : undefined;
  }

  private constructor(hash: OneShotHash, crypto: typeof NodeCrypto, key: Uint8Array) {
    this.#hash = hash;
    // A key longer than a block is replaced by its digest (RFC 2104, section 2).
    const block = key.byteLength > BLOCK_BYTES ? crypto.createHash('sha256').update(key).digest() : key;
    for (let i = 0; i < BLOCK_BYTES; i++) {
      const byte = i < block.byteLength ? block[i]! : 0;
      this.#innerBlock[i] = byte ^ 0x36;
      this.#outer[i] = byte ^ 0x5c;
    }
  }

  /**
   * Write the HMAC of `body` into `digest` (32 bytes) and answer true, or answer false, writing
   * nothing, when the body is longer than {@link SCRATCH_BODY_BYTES}.
   */
  digestInto(body: Uint8Array, digest: Uint8Array): boolean {
    const length = body.byteLength;
    if (length > SCRATCH_BODY_BYTES) return false;
    scratch ??= new Uint8Array(BLOCK_BYTES + SCRATCH_BODY_BYTES);
    const input = scratch;
    input.set(this.#innerBlock, 0);
    input.set(body, BLOCK_BYTES);
    const inner = this.#hash('sha256', input.subarray(0, BLOCK_BYTES + length), 'binary');
    // The shared buffer keeps neither the key's inner block nor the body past this call: a heap
    // snapshot or a later bug reading it finds zeros, not the last event and a key-equivalent block.
    input.fill(0, 0, BLOCK_BYTES + length);
    const outer = this.#outer;
    for (let i = 0; i < DIGEST_BYTES; i++) outer[BLOCK_BYTES + i] = inner.charCodeAt(i);
    const mac = this.#hash('sha256', outer, 'binary');
    for (let i = 0; i < DIGEST_BYTES; i++) digest[i] = mac.charCodeAt(i);
    return true;
  }
}
