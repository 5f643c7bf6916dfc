/**
 * keyEncoder (src/stores/store-encoding.ts), which every built-in store uses to write keys: pure, no database.
 * Unit tier: no database. PostgresStore reserves NUL, RedisStore the hash-tag braces, the inbox `:`.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { keyEncoder } from '../../src/stores/store-encoding.js';

const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The format, decoded independently of the encoder: `%XX` (two hex digits) and `%uXXXX` (four). */
function decode(encoded: string): string {
  return encoded.replace(
    /%(?:u([0-9A-F]{4})|([0-9A-F]{2}))/g,
    (_, wide: string | undefined, narrow: string) => String.fromCharCode(Number.parseInt(wide ?? narrow, 16)),
  );
}

describe('keyEncoder', () => {
  test('keeps the keys stores already wrote (%, hash-tag braces, :, unpaired surrogates)', () => {
    expect(keyEncoder()('100%')).toBe('100%25');
    expect(keyEncoder('{}')('evt_{1}')).toBe('evt_%7B1%7D');
    expect(keyEncoder(':')('scope:evt_1')).toBe('scope%3Aevt_1');
    expect(keyEncoder()('a\uD800b\uDC00')).toBe('a%uD800b%uDC00');
    expect(keyEncoder()('é✓🚀 evt_plain:123')).toBe('é✓🚀 evt_plain:123');
  });

  test('escapes reserved control characters as two hex digits, so hex-like text after them stays apart', () => {
    const encode = keyEncoder('\u0000\u0001\u0010');
    expect(encode('a\u0000b')).toBe('a%00b');
    expect(encode('\u00010')).not.toBe(encode('\u0010'));
    expect(encode('\u00000')).not.toBe(encode('\u0000'));
    expect(encode('\u00010')).toBe('%010');
    expect(encode('\u0010')).toBe('%10');
  });

  test('distinct keys stay distinct, and no reserved character or unpaired surrogate is left', () => {
    const reserved = '\u0000\u0001\u0002\u0010\u001F:{}';
    const encode = keyEncoder(reserved);
    // Units chosen to collide if anything can: the escape's own characters, hex digits, reserved
    // characters, surrogates (paired and not), and text that looks like an escape already.
    const unit = fc.constantFrom(
      ...reserved,
      '%',
      'u',
      'U',
      '0',
      '1',
      '2',
      'A',
      'F',
      'D8',
      '\uD800',
      '\uDC00',
      '\uD83D\uDE80',
      'x',
    );
    const key = fc.array(unit, { maxLength: 12 }).map((units) => units.join(''));
    fc.assert(
      fc.property(key, key, (a, b) => {
        const [encodedA, encodedB] = [encode(a), encode(b)];
        expect(decode(encodedA)).toBe(a);
        if (a !== b) expect(encodedA).not.toBe(encodedB);
        for (const character of reserved) expect(encodedA).not.toContain(character);
        expect(encodedA).not.toMatch(UNPAIRED_SURROGATE);
      }),
      { numRuns: 2_000 },
    );
  });
});
