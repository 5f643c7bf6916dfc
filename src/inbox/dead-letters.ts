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

/**
 * `replayAll` for an engine that can list its dead letters: each replay leaves the list, so the first
 * page is read again until it holds nothing not yet replayed (an entry that stays, such as one a
 * replay could not remove, is not replayed twice), at most `limit` replays.
 */
export async function replayEach<Letter, Done>(
  firstPage: () => Promise<readonly Letter[]>,
  idOf: (letter: Letter) => string,
  replay: (letter: Letter) => Promise<Done>,
  limit = Number.POSITIVE_INFINITY,
): Promise<Done[]> {
  const done: Done[] = [];
  const seen = new Set<string>();
  while (done.length < limit) {
    const letters = (await firstPage()).filter((letter) => !seen.has(idOf(letter)));
    if (letters.length === 0) break;
    for (const letter of letters) {
      if (done.length >= limit) break;
      seen.add(idOf(letter));
      done.push(await replay(letter));
    }
  }
  return done;
}
