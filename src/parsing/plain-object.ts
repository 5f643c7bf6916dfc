/**
 * Whether `value` is an object with fields, as JSON.parse makes them: not null, not an array. The check
 * the parsers of untrusted JSON outside the core start with (the schemas, the sandbox's data file and
 * tokens, the dashboard's requests); the core's envelope keeps its own copy, so the path every
 * delivery takes stays as benchmarked. It holds no state and no class, so each bundle may carry its
 * own copy: importing it from a subpath's folder is safe, unlike the core's classes.
 */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
