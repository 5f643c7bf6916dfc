import { ConfigurationError } from './errors.js';
import { EVENT_TYPES, expandEventName } from './event-types.js';
import type { WebhookEvent, WebhookHandler } from './types.js';

type AnyHandler = WebhookHandler<WebhookEvent>;

const NO_HANDLERS: readonly AnyHandler[] = Object.freeze([]);

/**
 * The handlers of each documented event type, in registration order, kept as a ready list per type so
 * dispatch is one Map lookup. Only documented types are dispatched: a handler is never given an event
 * its types do not describe, and unknown types simply find no handlers.
 */
export class HandlerRegistry {
  readonly #byType = new Map<string, AnyHandler[]>();

  /** Register for the named types and wildcards, or for every documented type when `names` is undefined. */
  add(names: string | readonly string[] | undefined, handler: AnyHandler): void {
    if (typeof handler !== 'function') throw new ConfigurationError('A handler must be a function.');
    const types = new Set<string>();
    if (names === undefined) {
      for (const type of EVENT_TYPES) types.add(type);
    } else {
      const list = typeof names === 'string' ? [names] : names;
      if (list.length === 0) throw new ConfigurationError('on() needs at least one event name.');
      for (const name of list) {
        const expanded = typeof name === 'string' ? expandEventName(name) : undefined;
        if (!expanded) {
          throw new ConfigurationError(
            `"${String(name)}" is not an event the service sends: use one of ${EVENT_TYPES.join(', ')}, or a wildcard such as 'payment.*'.`,
          );
        }
        for (const type of expanded) types.add(type);
      }
    }
    for (const type of types) {
      const handlers = this.#byType.get(type);
      if (handlers) handlers.push(handler);
      else this.#byType.set(type, [handler]);
    }
  }

  /** The handlers for a type, in registration order; an empty list for types nobody handles. */
  handlersFor(type: string): readonly AnyHandler[] {
    return this.#byType.get(type) ?? NO_HANDLERS;
  }
}
