/**
 * Keys that collide under the short hashes a store author reaches for when a key is "too long" for a
 * backend (a 32-bit hash as the record's key): FNV-1a, CRC-32, djb2 and Java's `String.hashCode`. With
 * 32 bits, two random event ids share a hash after about 77,000 ids (the birthday bound), far more than a
 * check generates: so the checker makes the collisions itself, with ids shaped as a receiver's are.
 */

const encoder = new TextEncoder();

/**
 * The 32-bit hashes the checker has colliding keys for.
 *
 * @example
 * ```ts
 * const hash: ShortHash = 'fnv1a32';
 * ```
 */
export type ShortHash = 'fnv1a32' | 'crc32' | 'djb2' | 'javaHashCode';

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

function fnv1a32Step(state: number, bytes: Uint8Array): number {
  let hash = state;
  for (const byte of bytes) hash = Math.imul(hash ^ byte, FNV_PRIME) >>> 0;
  return hash;
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/**
 * A 32-bit hash of a string: FNV-1a, CRC-32 (IEEE, as zlib's) and djb2 (`h * 33 + byte` from 5381) over
 * its UTF-8 bytes, Java's `hashCode` (`h * 31 + unit`) over its UTF-16 code units.
 *
 * @example
 * ```ts
 * shortHash('javaHashCode', 'Aa') === shortHash('javaHashCode', 'BB'); // true
 * ```
 */
export function shortHash(hash: ShortHash, text: string): number {
  switch (hash) {
    case 'fnv1a32':
      return fnv1a32Step(FNV_OFFSET, encoder.encode(text));
    case 'crc32': {
      let c = 0xffffffff;
      for (const byte of encoder.encode(text)) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
      return (c ^ 0xffffffff) >>> 0;
    }
    case 'djb2': {
      let h = 5381;
      for (const byte of encoder.encode(text)) h = (Math.imul(h, 33) + byte) >>> 0;
      return h;
    }
    case 'javaHashCode': {
      let h = 0;
      for (let i = 0; i < text.length; i++) h = (Math.imul(h, 31) + text.charCodeAt(i)) | 0;
      return h >>> 0;
    }
  }
}

/**
 * Pairs of event ids of one length that collide under a hash whatever comes before them: CRC-32 is
 * affine over GF(2) and djb2 and `hashCode` are polynomials, so two ids of one length with one hash
 * keep it behind any common prefix (the history's key prefix, a receiver's scope). Found by search
 * (CRC-32: a birthday search over random ids) or by hand (`hashCode`: "Aa" and "BB" weigh the same;
 * djb2: "Ab" and "BA"); test/testing/hash-collisions.test.ts proves each pair.
 */
const PREFIX_FREE_PAIRS: Readonly<Record<Exclude<ShortHash, 'fnv1a32'>, readonly [string, string]>> = {
  crc32: ['evt_C6r2Kj0q', 'evt_hY3iQ8SP'],
  djb2: ['evt_Ab3kQ9zT', 'evt_BA3kQ9zT'],
  javaHashCode: ['evt_Aa3kQ9zT', 'evt_BB3kQ9zT'],
};

/** A stride coprime to 62^3 (= 2^3 × 31^3). */
const TAIL_STRIDE = 100_003;

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/**
 * Two event ids (`evt_` and eight letters or digits) that collide under `hash` once put after `prefix`:
 * `shortHash(hash, prefix + a) === shortHash(hash, prefix + b)`. FNV-1a mixes its state non-linearly, so
 * its pair depends on the prefix and is searched for here: two three-letter tails whose states differ
 * only in their low byte (a birthday search on the other 24 bits: about 6,000 tails, 1 ms), then a fourth
 * letter each that cancels that byte (FNV-1a XORs each byte in before multiplying), so the states are
 * equal from there on, and the same four letters end both ids.
 *
 * @example
 * ```ts
 * const [a, b] = collidingIds('fnv1a32', 'h7-');
 * shortHash('fnv1a32', `h7-${a}`) === shortHash('fnv1a32', `h7-${b}`); // true
 * ```
 */
export function collidingIds(hash: ShortHash, prefix: string): readonly [string, string] {
  if (hash !== 'fnv1a32') return PREFIX_FREE_PAIRS[hash];
  const start = fnv1a32Step(FNV_OFFSET, encoder.encode(`${prefix}evt_`));
  const codes = Array.from(ALPHABET, (letter) => letter.charCodeAt(0));
  const isLetter = new Uint8Array(256);
  for (const code of codes) isLetter[code] = 1;
  // High 24 bits of a tail's state -> that tail's three letters, packed, and its state.
  const tails = new Map<number, { letters: number; state: number }>();
  const count = codes.length ** 3;
  for (let i = 0; i < count; i++) {
    // Tails in a scrambled order (a stride coprime to their count): in lexicographic order FNV's weak
    // diffusion into the high bits delays the first collision twentyfold.
    const j = (i * TAIL_STRIDE) % count;
    const letters = [codes[j % 62]!, codes[Math.floor(j / 62) % 62]!, codes[Math.floor(j / 3844)]!];
    let state = start;
    for (const letter of letters) state = Math.imul(state ^ letter, FNV_PRIME) >>> 0;
    const packed = (letters[0]! << 16) | (letters[1]! << 8) | letters[2]!;
    const other = tails.get(state >>> 8);
    if (other === undefined) {
      tails.set(state >>> 8, { letters: packed, state });
      continue;
    }
    const difference = (state ^ other.state) & 0xff;
    for (const x of codes) {
      const y = x ^ difference;
      if (isLetter[y] !== 1) continue;
      // (other's state ^ x) === (state ^ y): equal states after the fourth letter, so equal hashes after
      // any common continuation.
      return [`evt_${word(other.letters, x)}0q2K`, `evt_${word(packed, y)}0q2K`];
    }
  }
  // Unreachable in practice: 238,328 tails in 2^24 buckets collide about 1,700 times.
  throw new Error(`no FNV-1a collision found after ${JSON.stringify(prefix)}`);
}

/** Three letters packed in an integer, then a fourth. */
function word(letters: number, last: number): string {
  return String.fromCharCode(letters >>> 16, (letters >>> 8) & 0xff, letters & 0xff, last);
}
