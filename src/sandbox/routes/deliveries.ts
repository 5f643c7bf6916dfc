import { invalidRequest, requestError } from '../api-errors.js';
import { paginate, parsePage } from '../pagination.js';
import { DELIVERY_STATUSES, type Delivery } from '../resources.js';
import type { Router } from '../router.js';

/**
 * Sandbox-only inspection: `GET /sandbox/deliveries` lists the caller's deliveries newest first, with
 * every attempt (filters `webhook_id`, `event_id`, `event_type`, `status`; `limit`/`offset`), and
 * `GET /sandbox/deliveries/:id` shows one. These requests do not count against the rate limit, so tests
 * and scripts may poll them.
 */
export function registerDeliveryRoutes(router: Router): void {
  router.add('GET', '/sandbox/deliveries', ({ account, query }) => {
    const page = parsePage(query);
    const status = query.get('status');
    if (status !== null && !(DELIVERY_STATUSES as readonly string[]).includes(status)) {
      throw invalidRequest('status', `must be one of ${DELIVERY_STATUSES.join(', ')}`);
    }
    const filters = (['webhook_id', 'event_id', 'event_type', 'status'] as const).flatMap((field) => {
      const value = query.get(field);
      return value === null ? [] : [[field, value] as const];
    });
    const matching = [...account.deliveries.values()]
      .filter((delivery) => filters.every(([field, value]) => delivery[field] === value))
      .reverse();
    return { status: 200, body: paginate<Delivery>(matching, page) };
  });

  router.add('GET', '/sandbox/deliveries/:id', ({ account, params }) => {
    const delivery = params.id === undefined ? undefined : account.deliveries.get(params.id);
    if (delivery === undefined)
      throw requestError(404, 'delivery_not_found', `No delivery with id ${params.id}.`);
    return { status: 200, body: delivery };
  });
}
