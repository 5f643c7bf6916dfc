import type { WebhookEventMap, WebhookEventName } from 'service-webhooks';
import type { DeliveryScheduler } from '../delivery-scheduler.js';
import { buildEvent } from '../events.js';
import type { SandboxStore } from '../store.js';

/** What every group of routes works with. */
export interface SandboxContext {
  store: SandboxStore;
  scheduler: DeliveryScheduler;
  /** Registrations may use `http://` addresses. */
  allowHttp: boolean;
}

/** Build the event a change caused and deliver it to every subscribed registration. */
export function emit<Name extends WebhookEventName>(
  context: SandboxContext,
  type: Name,
  data: WebhookEventMap[Name]['data'],
  requestId: string,
): void {
  context.scheduler.dispatch(buildEvent(type, data, requestId));
}
