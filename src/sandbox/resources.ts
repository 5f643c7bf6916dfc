/**
 * The records the sandbox API answers with, as JSON. The CLI's `deliveries` command reads them too,
 * which is why they live apart from the account that holds them.
 *
 * @packageDocumentation
 */
import type { AnyWebhookEvent, WebhookEventName } from 'service-webhooks/core';
import type { ReceiverReport } from '../dev/report.js';

/** A user, with the fields the service documents. */
export interface User {
  id: string;
  name: string;
  email: string;
  created_at: string;
}

/** A project. The service shows no fields; the sandbox chooses these. */
export interface Project {
  id: string;
  name: string;
  description: string | null;
  created_at: string;
}

/** The outcome a payment reached. */
export type PaymentStatus = 'succeeded' | 'failed' | 'refunded';

/** A payment, created only by the sandbox trigger. Amounts are in minor units (cents). */
export interface Payment {
  id: string;
  amount: number;
  currency: string;
  status: PaymentStatus;
  created_at: string;
}

/** A webhook registration. */
export interface WebhookRegistration {
  id: string;
  url: string;
  events: WebhookEventName[];
  secret: string;
  created_at: string;
}

/** One POST of a delivery to the receiver. */
export interface DeliveryAttempt {
  /** 1 for the first attempt, up to `SENDER_MAX_ATTEMPTS`. */
  attempt: number;
  started_at: string;
  duration_ms: number;
  /** The receiver's HTTP status, `null` when none came (timeout, refused connection). */
  status: number | null;
  /** Why no status came, or why the attempt was not made. */
  error: string | null;
  /** The start of the receiver's answer, for debugging. */
  response_body: string;
  /** The answer carried `x-webhook-duplicate: true`. */
  duplicate?: boolean;
  /** The answer carried `x-webhook-stale: true` (the receiver's `ordering` found a newer event handled). */
  stale?: boolean;
  /** The status table's code of an error answer, when it has one. */
  code?: string | null;
  /** The answer's `Retry-After`, when it had one. */
  retry_after?: string | null;
  /** What the receiver's own `devReporter` said of this attempt (`service-webhooks dev` joins it). */
  receiver?: ReceiverReport | null;
}

/** Where a delivery stands: still being attempted, acknowledged with a 2xx, or given up. */
export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** Every {@link DeliveryStatus}, for validating filters. */
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['pending', 'succeeded', 'failed'];

/** One event on its way to one registration. */
export interface Delivery {
  id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: DeliveryAttempt[];
  /** When the next attempt is due (ISO 8601), `null` once the delivery is settled. */
  next_attempt_at: string | null;
  created_at: string;
  /** The event as dispatched; each attempt sends `pending_webhooks` as counted at that moment. */
  event: AnyWebhookEvent;
  /** Why it was made, when not by the API (`service-webhooks dev`: `sent`, `replay`, `edited`, a probe). */
  label?: string;
  /** `false` for a probe: one attempt, never retried (a forged signature is not the service's delivery). */
  retried?: boolean;
  /** Signed with a random secret instead of the registration's, to show the receiver refusing it. */
  forged?: boolean;
}
