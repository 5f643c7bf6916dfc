/**
 * What the dashboard's "Send" buttons make: a sample of each event type (remembered, to tell one sent
 * as it was from an edited one), and the deliveries of each case, labelled: as the service sends, and
 * the cases a receiver must refuse.
 *
 * @packageDocumentation
 */
import { EVENT_TYPES, isKnownEventType } from 'service-webhooks/core';
import { createTestEvent } from 'service-webhooks/testing';
import { isPlainObject } from '../parsing/plain-object.js';
import type { DeliveryScheduler } from '../sandbox/delivery-scheduler.js';
import { newId } from '../sandbox/ids.js';
import type { Delivery } from '../sandbox/index.js';
import { SEND_CASES, type SendRequest } from './api-types.js';
import { DashboardApiError, type DashboardContext } from './dashboard-context.js';

/** How old `created` is in the `stale_created` case: two days, past any sensible tolerance. */
const STALE_SECONDS = 2 * 24 * 3600;

/** How many handed-out samples are remembered, to tell a sample sent as it was from an edited one. */
const ISSUED_SAMPLES = 100;

export function samples(issued: Map<string, string>): Record<string, Record<string, unknown>> {
  const made = EVENT_TYPES.map(
    (type) => createTestEvent(type, { livemode: false }) as unknown as Record<string, unknown>,
  );
  for (const sample of made) {
    issued.set(sample.id as string, JSON.stringify(sample));
    if (issued.size > ISSUED_SAMPLES) issued.delete(issued.keys().next().value!);
  }
  return Object.fromEntries(made.map((sample) => [sample.type, sample]));
}

// The page may send anything it was edited into; the receiver is what judges it, so only what the
// sandbox itself needs (an id to deduplicate by, a type to label the row) is required.
function eventOf(request: SendRequest): Record<string, unknown> & { id: string; type: string } {
  if (request.event !== undefined) {
    const event = request.event;
    if (!isPlainObject(event) || typeof event.id !== 'string' || typeof event.type !== 'string') {
      throw new DashboardApiError(
        400,
        'invalid_event',
        'The event must be a JSON object with a string id and type.',
      );
    }
    return event as Record<string, unknown> & { id: string; type: string };
  }
  const type = request.type;
  if (typeof type !== 'string' || !isKnownEventType(type)) {
    throw new DashboardApiError(400, 'invalid_type', `type must be one of ${EVENT_TYPES.join(', ')}.`);
  }
  return createTestEvent(type, { livemode: false }) as unknown as Record<string, unknown> & {
    id: string;
    type: string;
  };
}

export function send(context: DashboardContext, body: unknown): Delivery[] {
  if (!isPlainObject(body))
    throw new DashboardApiError(400, 'invalid_request', 'The body must be a JSON object.');
  const request = body as SendRequest;
  const sendCase = request.case ?? 'sent';
  if (!(SEND_CASES as readonly string[]).includes(sendCase)) {
    throw new DashboardApiError(400, 'invalid_case', `case must be one of ${SEND_CASES.join(', ')}.`);
  }
  let event = eventOf(request);
  const { account, scheduler } = context;
  const registration = context.registration();
  // The sandbox's events are typed; an edited one may be anything, which is the point of editing it.
  const dispatch = (how: Parameters<DeliveryScheduler['deliverTo']>[3]) =>
    scheduler.deliverTo(account, registration, event as never, how);
  switch (sendCase) {
    case 'forged_signature':
      return [dispatch({ label: 'forged_signature', retried: false, forged: true })];
    case 'stale_created':
      event = { ...event, created: Math.floor(Date.now() / 1000) - STALE_SECONDS };
      return [dispatch({ label: 'stale_created', retried: false })];
    case 'concurrent_copies':
      // The race is the point: an event the receiver already handled would come back as two plain
      // duplicates, so such an event goes out under a fresh id. Both copies leave on the same tick.
      if ([...account.deliveries.values()].some((delivery) => delivery.event_id === event.id)) {
        event = { ...event, id: newId('evt') };
      }
      return [dispatch({ label: 'concurrent_copy' }), dispatch({ label: 'concurrent_copy' })];
    default:
      return [dispatch({ label: request.event === undefined ? 'sent' : labelOf(context, event) })];
  }
}

/**
 * `sent` for a sample sent as it was handed out, `replay` for a delivered event sent unchanged (its
 * detail's "Edit and resend", not edited), `edited` for anything else.
 */
function labelOf(context: DashboardContext, event: { id: string }): string {
  const text = JSON.stringify(event);
  for (const delivery of context.account.deliveries.values()) {
    if (delivery.event_id === event.id && JSON.stringify(delivery.event) === text) return 'replay';
  }
  return context.issuedSamples.get(event.id) === text ? 'sent' : 'edited';
}
