import type { Delivery } from '../sandbox/index.js';
import { DELIVERY_LABELS, type DeliveryLabel, type DevDelivery } from './api-types.js';

/**
 * A sandbox delivery as the page shows it. Deliveries made through the sandbox's API (creating a user
 * with a test key, say) carry no label: they are `api`.
 */
export function toDevDelivery(
  delivery: Delivery,
  url: string,
  sending: boolean,
  revision: number,
): DevDelivery {
  const label = (DELIVERY_LABELS as readonly string[]).includes(delivery.label ?? '')
    ? (delivery.label as DeliveryLabel)
    : 'api';
  return {
    id: delivery.id,
    event_id: delivery.event_id,
    event_type: delivery.event_type,
    status: delivery.status,
    label,
    url,
    created_at: delivery.created_at,
    next_attempt_at: delivery.next_attempt_at,
    next_attempt: delivery.status === 'pending' ? delivery.attempts.length + 1 : null,
    in_flight: sending,
    revision,
    event: delivery.event as unknown as Record<string, unknown>,
    attempts: delivery.attempts.map((attempt) => ({
      attempt: attempt.attempt,
      started_at: attempt.started_at,
      duration_ms: attempt.duration_ms,
      status: attempt.status,
      error: attempt.error,
      response_body: attempt.response_body,
      code: attempt.code ?? null,
      duplicate: attempt.duplicate ?? false,
      stale: attempt.stale ?? false,
      retry_after: attempt.retry_after ?? null,
      receiver: attempt.receiver ?? null,
    })),
    retried: delivery.retried !== false,
  };
}
