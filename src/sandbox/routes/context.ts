import type { WebhookEventMap, WebhookEventName } from 'service-webhooks/core';
import type { Account } from '../account.js';
import type { DeliveryScheduler } from '../delivery-scheduler.js';
import { buildEvent } from '../event-envelope.js';

/** What every group of routes works with; the data itself is the request's `account`. */
export interface SandboxContext {
  scheduler: DeliveryScheduler;
  /** Registrations may use `http://` addresses. */
  allowHttp: boolean;
}

/** Build the event a change in `account` caused and deliver it to the account's subscribed registrations. */
export function emit<Name extends WebhookEventName>(
  context: SandboxContext,
  account: Account,
  type: Name,
  data: WebhookEventMap[Name]['data'],
  requestId: string,
): void {
  context.scheduler.dispatch(account, buildEvent(type, data, requestId));
}
