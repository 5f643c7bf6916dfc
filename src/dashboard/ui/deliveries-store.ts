import type { DevDelivery } from '../api-types.js';

/** The history as the page holds it: by id for O(1) updates from the stream, ordered newest first. */
export interface Deliveries {
  readonly byId: ReadonlyMap<string, DevDelivery>;
  readonly order: readonly string[];
}

export const EMPTY: Deliveries = { byId: new Map(), order: [] };

function newerFirst(a: DevDelivery, b: DevDelivery): number {
  return Date.parse(b.created_at) - Date.parse(a.created_at);
}

export function fromList(list: readonly DevDelivery[], limit: number): Deliveries {
  const sorted = [...list].sort(newerFirst).slice(0, limit);
  return { byId: new Map(sorted.map((d) => [d.id, d])), order: sorted.map((d) => d.id) };
}

/**
 * Puts one delivery from the stream (or an action's answer) in place, unless the page holds a newer copy. A known id keeps its position (only its object changes, so
 * only its row re-renders); a new one goes where its `created_at` belongs, which is the top but for
 * events that arrive out of order.
 */
export function upsert(current: Deliveries, delivery: DevDelivery, limit: number): Deliveries {
  // The answer to a send and the stream race: a copy older than the one held is dropped, so the row
  // never goes back to a state it has left (see DevDelivery.revision).
  const held = current.byId.get(delivery.id);
  if (held !== undefined && held.revision > delivery.revision) return current;
  const byId = new Map(current.byId);
  const known = byId.has(delivery.id);
  byId.set(delivery.id, delivery);
  if (known) return { byId, order: current.order };
  const created = Date.parse(delivery.created_at);
  let index = 0;
  while (index < current.order.length) {
    const other = byId.get(current.order[index]!);
    if (!other || Date.parse(other.created_at) <= created) break;
    index += 1;
  }
  const order = [...current.order.slice(0, index), delivery.id, ...current.order.slice(index)];
  while (order.length > limit) {
    const dropped = order.pop();
    if (dropped !== undefined) byId.delete(dropped);
  }
  return { byId, order };
}
