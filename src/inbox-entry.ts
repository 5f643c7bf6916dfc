import { isTenantId } from './dedup-scope.js';
import { checkEnvelope } from './envelope.js';
import { InvalidInboxEntryError } from './errors.js';
import type { InboxEntry } from './types.js';

/** Longest replay id: run keys must stay within the store's key length. */
const MAX_REPLAY_ID_LENGTH = 64;

/**
 * The entry as the door wrote it, or the reason it is not one: the door's own envelope check on the
 * event (a worker runs handlers on nothing the door would refuse), and the two numbers it adds. The
 * age is not checked again: an event may wait in a queue far longer than a delivery may be late.
 * `secretIndex` is only told to handlers, and a rotation may have dropped the secret since, so any
 * whole number from 0 is one. A `traceparent` is not checked: the telemetry plug-in ignores one it
 * cannot read, and a trace is never a reason to dead-letter an event. Whether the door wrote the entry
 * at all is the seal's question (`inbox-seal.ts`), asked next.
 */
export function checkEntry(entry: InboxEntry): InboxEntry {
  if (typeof entry !== 'object' || entry === null) throw new InvalidInboxEntryError('it is not an object.');
  const { event, receivedAt, secretIndex } = entry as Partial<InboxEntry>;
  if (event === undefined) throw new InvalidInboxEntryError('it has no `event`.');
  try {
    checkEnvelope(event, 'event');
  } catch (error) {
    throw new InvalidInboxEntryError((error as Error).message);
  }
  if (typeof receivedAt !== 'number' || !Number.isFinite(receivedAt) || receivedAt < 0)
    throw new InvalidInboxEntryError('`receivedAt` must be a time in Unix milliseconds.');
  if (!Number.isSafeInteger(secretIndex) || (secretIndex as number) < 0)
    throw new InvalidInboxEntryError('`secretIndex` must be a whole number from 0.');
  const { tenant } = entry as Partial<InboxEntry>;
  if (tenant !== undefined && !isTenantId(tenant))
    throw new InvalidInboxEntryError(
      '`tenant` must be a non-empty string of at most 128 characters, percent-encoded.',
    );
  const { attempt } = entry as Partial<InboxEntry>;
  if (attempt !== undefined && (!Number.isSafeInteger(attempt) || attempt < 1))
    throw new InvalidInboxEntryError('`attempt` must be a whole number from 1.');
  return entry;
}

/** A replay's id, which keys its run apart from the first runs of the event. */
export function checkReplayId(replayId: string | undefined): string | undefined {
  if (replayId === undefined) return undefined;
  if (typeof replayId !== 'string' || replayId.length === 0 || replayId.length > MAX_REPLAY_ID_LENGTH)
    throw new TypeError(`replayId must be a non-empty string of at most ${MAX_REPLAY_ID_LENGTH} characters.`);
  return replayId;
}
