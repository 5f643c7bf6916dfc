/**
 * What the built-in stores share in how they write keys and durations. Pure functions: each store
 * subpath bundles its own copy, so loading one store never loads another.
 */

/** Unpaired UTF-16 surrogates: UTF-8 cannot hold them, and every one would become U+FFFD. */
const UNPAIRED_SURROGATE = '[\\uD800-\\uDBFF](?![\\uDC00-\\uDFFF])|(?<![\\uD800-\\uDBFF])[\\uDC00-\\uDFFF]';

/**
 * An encoder of store keys as a backend can hold them, distinct keys kept distinct: `%` (the escape
 * character) and each character of `reserved` become `%` and their hex code in two digits; unpaired
 * surrogates, which the backend's UTF-8 would turn into U+FFFD (so that different keys collided), `%u`
 * and theirs in four. Any other key is kept as it is. The pattern is compiled once, here, not per call.
 *
 * @example
 * ```ts
 * const encode = keyEncoder('{}'); // for a Redis hash tag
 * encode('evt_{1}'); // 'evt_%7B1%7D'
 * keyEncoder()('100%'); // '100%25'
 * keyEncoder('\u0000')('evt\u00001'); // 'evt%001' (PostgreSQL text cannot hold NUL)
 * ```
 */
export function keyEncoder(reserved = ''): (key: string) => string {
  const characters = `%${reserved}`.replace(/[\\\]^-]/g, '\\$&');
  const pattern = new RegExp(`[${characters}]|${UNPAIRED_SURROGATE}`, 'g');
  return (key) => key.replace(pattern, escapeUnit);
}

// Fixed width, so that no escape is a prefix of another followed by hex-like text: with variable width,
// '\u0001' then '0' and '\u0010' would both be '%10'. Every reserved character so far (`%`, `{`, `}`,
// `:`) and every surrogate already had this width, so no key written before changes.
function escapeUnit(unit: string): string {
  const code = unit.charCodeAt(0);
  const hex = code.toString(16).toUpperCase();
  return code < 0x80 ? `%${hex.padStart(2, '0')}` : `%u${hex.padStart(4, '0')}`;
}

/**
 * A duration as whole, positive milliseconds: a fraction is rounded up, so a lease is never shortened.
 *
 * @example
 * ```ts
 * wholeMilliseconds(1.2); // 2
 * ```
 */
export function wholeMilliseconds(ms: number): number {
  if (!Number.isFinite(ms) || ms <= 0) throw new RangeError(`Expected a positive duration in ms; got ${ms}.`);
  return Math.ceil(ms);
}
