import { ConfigurationError } from './errors.js';
import { EVENT_TYPES, expandEventName } from './event-types.js';
import type { IdempotencyStore, OrderingMode, OrderingRules, WebhookEvent } from './types.js';

/**
 * The four store operations the `ordering` option needs, by name: a store offers all of them or none.
 *
 * @example
 * ```ts
 * import { ORDERING_STORE_OPERATIONS } from 'service-webhooks';
 *
 * const missing = ORDERING_STORE_OPERATIONS.filter((name) => typeof store[name] !== 'function');
 * ```
 */
export const ORDERING_STORE_OPERATIONS = Object.freeze([
  'claimResource',
  'renewResource',
  'releaseResource',
  'completeOrdered',
] as const);

/**
 * The position of a deletion: above every other, so that once a resource is deleted every later
 * event but another deletion is stale, whatever its `created` (a deleted resource stays deleted).
 */
export const DELETED_POSITION = Number.MAX_SAFE_INTEGER;

/** The lifecycle ranks within one second of `created`: a creation comes before anything else. */
const CREATED_RANK = 0;
const OTHER_RANK = 1;
const RANKS_PER_SECOND = 2;

/** Longest resource name (`object:id`) guarded; a longer one would make store keys too long. */
export const MAX_RESOURCE_LENGTH = 128;

/** Between a guarded event's resource and the rest of its key (see `IdempotencyStore.claimResource`). */
export const RESOURCE_SEPARATOR = '\u001f';

/**
 * Where an event stands in its resource's history: `created` (Unix seconds) times two plus its
 * lifecycle rank (0 for a `*.created`, 1 for every other type), or {@link DELETED_POSITION} for a
 * `*.deleted`. An event is stale when its position is below the resource's watermark; two events of
 * one position (one second, one rank) both run, in the order they arrive.
 *
 * @example
 * ```ts
 * import { orderingPosition } from 'service-webhooks';
 *
 * orderingPosition({ type: 'user.updated', created: 1_700_000_000 }); // 3_400_000_001
 * ```
 */
export function orderingPosition(event: Pick<WebhookEvent, 'type' | 'created'>): number {
  const { type } = event;
  if (type.endsWith('.deleted')) return DELETED_POSITION;
  return event.created * RANKS_PER_SECOND + (type.endsWith('.created') ? CREATED_RANK : OTHER_RANK);
}

/** What the guard decided for one event. */
export type OrderingDecision =
  | {
      readonly guarded: true;
      readonly mode: OrderingMode;
      /** `object:id`, the object percent-encoded so that no two pairs give one name. */
      readonly resource: string;
      readonly position: number;
    }
  | { readonly guarded: false; readonly reason: 'no_resource' };

const NO_RESOURCE: OrderingDecision = Object.freeze({ guarded: false, reason: 'no_resource' });

/**
 * The `ordering` option, checked once: which event types are guarded and how, and the decision for
 * each event (its resource and position). Made only for receivers with the option, so the others pay
 * nothing for it.
 */
export class OrderingGuard {
  readonly #modes = new Map<string, OrderingMode>();
  readonly watermarkTtlMs: number;

  constructor(rules: OrderingRules, store: IdempotencyStore, watermarkTtlMs: number) {
    if (typeof rules !== 'object' || rules === null || Array.isArray(rules)) {
      throw new ConfigurationError(
        "`ordering` must be an object of event types or wildcards to 'serialize' or 'latest', such as { 'user.*': 'latest' }.",
      );
    }
    const missing = ORDERING_STORE_OPERATIONS.filter((name) => typeof store[name] !== 'function');
    if (missing.length > 0) {
      throw new ConfigurationError(
        `\`ordering\` needs a store with the ordering operations; this store lacks ${missing.map((name) => `\`${name}\``).join(', ')}. MemoryStore, RedisStore, PostgresStore and DynamoDBStore have them.`,
      );
    }
    // Wildcards first, so that a type's own rule overrides its wildcard's.
    const names = Object.keys(rules).sort((a, b) => Number(b.endsWith('.*')) - Number(a.endsWith('.*')));
    for (const name of names) {
      const mode = (rules as Record<string, unknown>)[name];
      if (mode !== 'serialize' && mode !== 'latest') {
        throw new ConfigurationError(
          `\`ordering['${name}']\` must be 'serialize' or 'latest'; got ${JSON.stringify(mode) ?? String(mode)}.`,
        );
      }
      const types = expandEventName(name);
      if (!types) {
        throw new ConfigurationError(
          `\`ordering\` names "${name}", which is not an event the service sends: use one of ${EVENT_TYPES.join(', ')}, or a wildcard such as 'user.*'.`,
        );
      }
      for (const type of types) this.#modes.set(type, mode);
    }
    this.watermarkTtlMs = watermarkTtlMs;
  }

  /** The decision for `event`, or `undefined` when its type is not guarded. */
  decide(event: WebhookEvent): OrderingDecision | undefined {
    const mode = this.#modes.get(event.type);
    if (mode === undefined) return undefined;
    const { object, id } = event.data;
    if (typeof object !== 'string' || object === '' || typeof id !== 'string' || id === '')
      return NO_RESOURCE;
    const resource = `${encodeURIComponent(object)}:${id}`;
    // The separator inside a resource would split it where a store looks for it (see RESOURCE_SEPARATOR).
    if (resource.length > MAX_RESOURCE_LENGTH || resource.includes(RESOURCE_SEPARATOR)) return NO_RESOURCE;
    return { guarded: true, mode, resource, position: orderingPosition(event) };
  }
}
