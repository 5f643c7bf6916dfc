import type { InboxAdmin } from 'service-webhooks/core';
import type { Account } from '../sandbox/account.js';
import type { DeliveryScheduler } from '../sandbox/delivery-scheduler.js';
import type { Delivery, WebhookRegistration } from '../sandbox/index.js';
import type { DashboardState, DevDelivery } from './api-types.js';
import type { EventStream } from './event-stream.js';
import type { ReportJoiner } from './report-join.js';

/** An answer the API refuses with, as `{ error: { code, message } }`. */
export class DashboardApiError extends Error {
  override name = 'DashboardApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** What the API works on: the dev account, its registration, the scheduler, the stream. */
export interface DashboardContext {
  readonly account: Account;
  readonly registration: () => WebhookRegistration;
  readonly scheduler: DeliveryScheduler;
  readonly stream: EventStream;
  readonly joiner: ReportJoiner;
  readonly inbox: InboxAdmin | undefined;
  readonly state: () => Omit<DashboardState, 'samples' | 'event_types'>;
  readonly view: (delivery: Delivery) => DevDelivery;
  /** A delivery changed outside the scheduler (a report joined it): a new revision, sent to the pages. */
  readonly changed: (delivery: Delivery) => void;
  /** A receiver reported: the time of its latest record, for the page's "receiver reporting" sign. */
  readonly reported: (at: string) => void;
  /** The samples `GET /state` handed out, by event id, as JSON. */
  readonly issuedSamples: Map<string, string>;
}
