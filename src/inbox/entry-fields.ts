/**
 * The fields of an entry that every engine carries as the door wrote them, in its body or its data:
 * the event, when it was received, the secret's index, the seal and, with `tenant`, the tenant. One
 * list, so that a field the door adds reaches every engine's worker (each engine carries the trace
 * context and the attempt its own way). `process` checks what comes back against the seal: nothing
 * read here is trusted.
 */
import type { InboxEntry } from 'service-webhooks/core';

type Writable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * The carried fields of `entry`, and nothing else of the object.
 *
 * @example
 * ```ts
 * const body = JSON.stringify(carriedFields(entry));
 * ```
 */
export function carriedFields(entry: InboxEntry): InboxEntry {
  const fields: Writable<InboxEntry> = {
    event: entry.event,
    receivedAt: entry.receivedAt,
    secretIndex: entry.secretIndex,
  };
  if (typeof entry.seal === 'string') fields.seal = entry.seal;
  if (typeof entry.tenant === 'string') fields.tenant = entry.tenant;
  return fields;
}

/**
 * The carried fields read back from what an engine stored, as they are, whatever they are (a poison
 * message's are `undefined`, or anything): `process` refuses what is not an entry the door sealed.
 *
 * @example
 * ```ts
 * const entry = carriedEntry(JSON.parse(body));
 * ```
 */
export function carriedEntry(data: unknown): Writable<InboxEntry> {
  const value = typeof data === 'object' && data !== null ? (data as Partial<InboxEntry>) : undefined;
  const entry = {
    event: value?.event,
    receivedAt: value?.receivedAt,
    secretIndex: value?.secretIndex,
  } as Writable<InboxEntry>;
  if (value?.seal !== undefined) entry.seal = value.seal;
  if (value?.tenant !== undefined) entry.tenant = value.tenant;
  return entry;
}
