import type { WebhookEvent, WebhookEventMap, WebhookEventName } from 'service-webhooks/core';
import { newId } from './ids.js';

/**
 * The envelope of an event the sandbox emits: every field the service documents, `livemode: false`
 * because these are sandbox events. `pending_webhooks` is counted when the
 * event is dispatched and again at each attempt.
 */
export function buildEvent<Name extends WebhookEventName>(
  type: Name,
  data: WebhookEventMap[Name]['data'],
  requestId: string,
): WebhookEventMap[Name] {
  const event: WebhookEvent<Name, WebhookEventMap[Name]['data']> = {
    id: newId('evt'),
    type,
    created: Math.floor(Date.now() / 1000),
    data,
    livemode: false,
    pending_webhooks: 0,
    request: { id: requestId },
  };
  // The map's entries are exactly WebhookEvent<Name, data>; TypeScript cannot see that for a generic Name.
  return event as unknown as WebhookEventMap[Name];
}
