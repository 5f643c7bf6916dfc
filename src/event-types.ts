import type { WebhookEventName, WildcardEventName } from './types.js';

/**
 * The nine event types the service documents, in the order of its spec.
 *
 * @example
 * ```ts
 * import { EVENT_TYPES } from 'service-webhooks';
 * for (const type of EVENT_TYPES) console.log(type);
 * ```
 */
export const EVENT_TYPES = Object.freeze([
  'user.created',
  'user.updated',
  'user.deleted',
  'project.created',
  'project.updated',
  'project.deleted',
  'payment.succeeded',
  'payment.failed',
  'payment.refunded',
] as const satisfies readonly WebhookEventName[]);

const KNOWN: ReadonlySet<string> = new Set(EVENT_TYPES);

/** Whether `type` is one of the nine documented types (so `toString` or `__proto__` is not). */
export function isKnownEventType(type: string): type is WebhookEventName {
  return KNOWN.has(type);
}

/** The documented types a name registered with `on()` stands for, or `undefined` if it is none. */
export function expandEventName(name: string): readonly WebhookEventName[] | undefined {
  if (isKnownEventType(name)) return [name];
  if (!name.endsWith('.*')) return undefined;
  const prefix = name.slice(0, -1);
  const matches = EVENT_TYPES.filter((type) => type.startsWith(prefix));
  return matches.length > 0 ? matches : undefined;
}

export type { WebhookEventName, WildcardEventName };
