/** What every engine's dead-letter tools share: the replay id of a dead letter and the page bounds. */
import { createHash } from 'node:crypto';

/**
 * The replay id of a dead letter: a digest of its id and the moment it was dead-lettered, so each
 * dead-lettering of an event has its own replay id (a replay that fails in turn is replayed afresh)
 * while replaying one dead letter twice gives the same one, and `process` runs it once. 22
 * characters: the store key stays well within its 400 characters.
 */
export function replayIdOf(deadLetterId: string, deadLetteredAt: number | string): string {
  return createHash('sha256').update(`${deadLetterId}\n${deadLetteredAt}`).digest('base64url').slice(0, 22);
}

/** `list()`'s page, checked: a whole offset from 0 and a limit from 1. */
export function checkPage(page: { readonly offset?: number; readonly limit?: number } = {}): {
  offset: number;
  limit: number;
} {
  const { offset = 0, limit = 20 } = page;
  if (!Number.isSafeInteger(offset) || offset < 0)
    throw new RangeError(`offset must be a whole number ≥ 0; got ${offset}.`);
  if (!Number.isSafeInteger(limit) || limit < 1)
    throw new RangeError(`limit must be a whole number ≥ 1; got ${limit}.`);
  return { offset, limit };
}
