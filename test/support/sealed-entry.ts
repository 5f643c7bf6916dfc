/**
 * Entries as a door seals them, for tests that make entries by hand: the core's own `InboxSeal`, keyed
 * as a receiver with `key` (its webhook secret, or its `inboxKey`) keys it.
 */
import type { InboxEntry } from 'service-webhooks';
import { InboxSeal } from '../../src/inbox-seal.js';

/**
 * `entry` with the seal a door whose secret (or `inboxKey`) is `key` writes.
 *
 * @example
 * ```ts
 * await webhooks.process(await sealed({ event, receivedAt: Date.now(), secretIndex: 0 }, secret));
 * ```
 */
export async function sealed<Entry extends InboxEntry>(entry: Entry, key: string): Promise<Entry> {
  return { ...entry, seal: await new InboxSeal([key]).seal(entry) };
}
