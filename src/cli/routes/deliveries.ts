import { requestError } from '../api-errors.js';
import type { Router } from '../router.js';
import type { Delivery } from '../store.js';
import { paginate, parsePage } from '../validation.js';
import type { SandboxContext } from './context.js';

/**
 * Sandbox-only inspection: `GET /sandbox/deliveries` lists deliveries newest first, with every attempt
 * (filters `webhook_id`, `event_id`, `event_type`, `status`; `limit`/`offset`), and
 * `GET /sandbox/deliveries/:id` shows one. These requests do not count against the rate limit, so tests
 * and scripts may poll them.
 */
export function registerDeliveryRoutes(router: Router, context: SandboxContext): void {
  const { store } = context;

  router.add('GET', '/sandbox/deliveries', ({ query }) => {
    const page = parsePage(query);
    const filters = (['webhook_id', 'event_id', 'event_type', 'status'] as const).flatMap((field) => {
      const value = query.get(field);
      return value === null ? [] : [[field, value] as const];
    });
    const matching = [...store.deliveries.values()]
      .filter((delivery) => filters.every(([field, value]) => delivery[field] === value))
      .reverse();
    return { status: 200, body: paginate<Delivery>(matching, page) };
  });

  router.add('GET', '/sandbox/deliveries/:id', ({ params }) => {
    const delivery = params.id === undefined ? undefined : store.deliveries.get(params.id);
    if (delivery === undefined)
      throw requestError(404, 'delivery_not_found', `No delivery with id ${params.id}.`);
    return { status: 200, body: delivery };
  });
}
