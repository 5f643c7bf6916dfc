/**
 * Whether `value` is an object with fields, as JSON.parse makes them: not null, not an array. The one
 * check every parser of untrusted JSON here starts with (the envelope, the schemas, the sandbox's data
 * file and tokens, the dashboard's requests).
 */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
