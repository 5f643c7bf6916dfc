/** A permission a token carries. `read` allows GET requests, `write` every other method. */
export type Scope = 'read' | 'write';

/** The scopes the service shows, in the order they are written back. */
export const SCOPES: readonly Scope[] = ['read', 'write'];

/** The scopes of a space-separated `scope` string, without repeats; `undefined` when one is unknown. */
export function parseScope(text: string): Scope[] | undefined {
  const names = text.split(' ').filter((name) => name !== '');
  if (!names.every((name) => (SCOPES as readonly string[]).includes(name))) return undefined;
  return SCOPES.filter((scope) => names.includes(scope));
}

/** Scopes as the space-separated string OAuth and the JWT `scope` claim use. */
export function formatScope(scopes: readonly Scope[]): string {
  return scopes.join(' ');
}

/**
 * The scope a request needs. Reads and writes are separate permissions, as most OAuth APIs make them:
 * a `write`-only token may not list, so ask for `read write` to do both.
 */
export function requiredScope(method: string): Scope {
  return method === 'GET' || method === 'HEAD' ? 'read' : 'write';
}
