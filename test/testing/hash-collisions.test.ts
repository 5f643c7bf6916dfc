/**
 * The colliding ids the store checker puts in its histories (src/testing/hash-collisions.ts): each pair
 * collides under its hash after any prefix, each hash is the one its name says (checked against
 * published values and zlib's CRC-32), and the ids are shaped as a receiver's event ids are.
 */
import { crc32 } from 'node:zlib';
import { describe, expect, test } from 'vitest';
import { collidingIds, type ShortHash, shortHash } from '../../src/testing/hash-collisions.js';

const HASHES: readonly ShortHash[] = ['fnv1a32', 'crc32', 'djb2', 'javaHashCode'];
const PREFIXES = ['', 'h7-', 'mi3kz0a1b2-417-', 'scope:', 'tenant-ü-'];

describe('shortHash is the hash it names', () => {
  test('published values', () => {
    // FNV-1a 32 test vectors (Fowler, Noll, Vo), Java's "Aa".hashCode(), djb2's seed for "".
    expect(shortHash('fnv1a32', '')).toBe(0x811c9dc5);
    expect(shortHash('fnv1a32', 'a')).toBe(0xe40c292c);
    expect(shortHash('fnv1a32', 'foobar')).toBe(0xbf9cf968);
    expect(shortHash('javaHashCode', 'Aa')).toBe(2112);
    expect(shortHash('javaHashCode', 'hello')).toBe(99_162_322);
    expect(shortHash('djb2', '')).toBe(5381);
    expect(shortHash('djb2', 'a')).toBe(5381 * 33 + 97);
  });

  test('CRC-32 agrees with zlib', () => {
    for (const text of ['', 'evt_1', 'scope:evt_C6r2Kj0q', '🚀 événement']) {
      expect(shortHash('crc32', text)).toBe(crc32(text));
    }
  });
});

describe('collidingIds', () => {
  for (const hash of HASHES) {
    test(`${hash}: two distinct event ids that collide after any prefix`, () => {
      for (const prefix of PREFIXES) {
        const [a, b] = collidingIds(hash, prefix);
        expect(a).not.toBe(b);
        expect(a).toMatch(/^evt_[A-Za-z0-9]{8}$/);
        expect(b).toMatch(/^evt_[A-Za-z0-9]{8}$/);
        expect(shortHash(hash, prefix + a), `${prefix}${a} / ${prefix}${b}`).toBe(
          shortHash(hash, prefix + b),
        );
      }
    });
  }

  test('FNV-1a is searched for per prefix in a few milliseconds at most (about one)', () => {
    const started = performance.now();
    for (let i = 0; i < 200; i++) collidingIds('fnv1a32', `run${i}-${i * 7}-`);
    expect((performance.now() - started) / 200).toBeLessThan(20);
  });
});
