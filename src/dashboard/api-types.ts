/**
 * The dashboard's HTTP API (`/_dev/api/*` on the sandbox's origin): the JSON shapes the server sends
 * and the page reads. Types only, so the page's bundle and the server compile against one contract.
 *
 * Every request needs the per-start token: the `x-service-webhooks-dev-token` header on fetches, the
 * `token` query parameter on the event stream (EventSource cannot set headers). The page reads the
 * token from `<meta name="service-webhooks-dev-token">` in the HTML the server serves at `/`.
 *
 * | method and path                                   | body              | answer                    |
 * |---------------------------------------------------|-------------------|---------------------------|
 * | GET    /_dev/api/state                            |                   | {@link DashboardState}    |
 * | GET    /_dev/api/secret                           |                   | `{ secret }` (on request) |
 * | GET    /_dev/api/deliveries                       |                   | `{ data: DevDelivery[] }`, newest first |
 * | DELETE /_dev/api/deliveries                       |                   | `{ deleted: number }`     |
 * | POST   /_dev/api/send                             | {@link SendRequest} | `{ data: DevDelivery[] }` |
 * | POST   /_dev/api/deliveries/:id/replay            |                   | `{ data: DevDelivery[] }` |
 * | GET    /_dev/api/deliveries/:id/export?as=fixture|test |              | a file (attachment)       |
 * | GET    /_dev/api/inbox                            |                   | {@link InboxView}         |
 * | GET    /_dev/api/inbox/dead-letters/:id          |                   | `DeadLetter`              |
 * | POST   /_dev/api/inbox/dead-letters/:id/replay   |                   | `Replay`                  |
 * | DELETE /_dev/api/inbox/dead-letters/:id          |                   | `{ removed: boolean }`    |
 * | POST   /_dev/api/report                           | `ReportBatch`     | `{ accepted: number }` (the receiver's devReporter) |
 * | GET    /_dev/api/events?token=…                   |                   | `text/event-stream` of {@link DashboardEvent} |
 *
 * Errors answer `{ error: { code, message } }` with a 4xx or 5xx status.
 *
 * @packageDocumentation
 */
import type { DeadLetter, InboxStats } from 'service-webhooks/core';
import type { ReceiverReport } from '../dev/report.js';

/** One attempt of a delivery, with the receiver's answer and, when it reports, its own account. */
export interface DevAttempt {
  /** 1 for the first attempt, up to 4 (the first and three retries). */
  readonly attempt: number;
  readonly started_at: string;
  readonly duration_ms: number;
  /** The receiver's HTTP status, `null` when none came (timeout, refused connection). */
  readonly status: number | null;
  /** Why no status came. */
  readonly error: string | null;
  /** The start of the receiver's answer body. */
  readonly response_body: string;
  /** The status table's code from the answer's `{ error: { code } }`, when it has one. */
  readonly code: string | null;
  /** The answer carried `x-webhook-duplicate: true`. */
  readonly duplicate: boolean;
  /** The answer carried `x-webhook-stale: true`: the receiver's `ordering` had handled a newer event of the resource. */
  readonly stale: boolean;
  /** The answer's `Retry-After`, when it had one. */
  readonly retry_after: string | null;
  /** What the receiver's `devReporter` said of this attempt, joined by event id and time. */
  readonly receiver: ReceiverReport | null;
}

/**
 * Why a delivery was made, beside the events the sandbox's own API causes: the one list,
 * {@link DeliveryLabel} is derived from it.
 *
 * @example
 * ```ts
 * const label: DeliveryLabel = DELIVERY_LABELS.includes(raw as DeliveryLabel) ? (raw as DeliveryLabel) : 'api';
 * ```
 */
export const DELIVERY_LABELS = [
  'sent',
  'replay',
  'edited',
  'forged_signature',
  'stale_created',
  'concurrent_copy',
  'api',
] as const;

/** One of {@link DELIVERY_LABELS}. */
export type DeliveryLabel = (typeof DELIVERY_LABELS)[number];

/**
 * What a Send button makes (see {@link SendRequest}'s `case`): the one list, {@link SendCase} is
 * derived from it.
 *
 * @example
 * ```ts
 * await fetch('/_dev/api/send', { method: 'POST', body: JSON.stringify({ type: 'user.created', case: SEND_CASES[1] }) });
 * ```
 */
export const SEND_CASES = ['sent', 'forged_signature', 'stale_created', 'concurrent_copies'] as const;

/** One of {@link SEND_CASES}. */
export type SendCase = (typeof SEND_CASES)[number];

/** A delivery as the dashboard shows it: the sandbox's record with the attempts' details. */
export interface DevDelivery {
  readonly id: string;
  readonly event_id: string;
  readonly event_type: string;
  /** `pending` while attempts remain, `succeeded` once acknowledged, `failed` once given up. */
  readonly status: 'pending' | 'succeeded' | 'failed';
  readonly label: DeliveryLabel;
  /** The receiver's address. */
  readonly url: string;
  readonly created_at: string;
  /** When the next attempt is due, `null` once settled. */
  readonly next_attempt_at: string | null;
  /** The attempt that comes next, when one is scheduled. */
  readonly next_attempt: number | null;
  /** An attempt is on its way to the receiver now. */
  readonly in_flight: boolean;
  /**
   * Grows with each change of the delivery (an attempt leaving, ending, a report joining it). The answer
   * to `POST /send` and the stream race each other: a page keeps the copy with the higher revision, so
   * a late answer never puts back a state the stream has already moved past.
   */
  readonly revision: number;
  /** The event as sent (the body of each attempt, but for `pending_webhooks`). */
  readonly event: Record<string, unknown>;
  readonly attempts: readonly DevAttempt[];
  /** A probe is sent once and never retried (a forged signature is not the service's delivery). */
  readonly retried: boolean;
}

/** What the page needs to start. */
export interface DashboardState {
  /** The receiver deliveries go to. */
  readonly forward: string;
  /** The secret's last four characters, so a developer can tell which one it is without seeing it. */
  readonly secret_hint: string;
  /** The multiplier of the retry delays (`--time-scale`). */
  readonly time_scale: number;
  /** The sender's retry delays in seconds (unscaled): 60, 300, 900. */
  readonly retry_delays_seconds: readonly number[];
  /** The attempt timeout in milliseconds (unscaled). */
  readonly attempt_timeout_ms: number;
  /** The nine event types, in the spec's order. */
  readonly event_types: readonly string[];
  /** A realistic event of each type, to edit before sending (fresh ids on each load of the state). */
  readonly samples: Readonly<Record<string, Record<string, unknown>>>;
  /** The inbox engine the dashboard reads (`bullmq`, `sqs`, `pg-boss`), `null` without one. */
  readonly inbox: string | null;
  /** The address a receiver's devReporter posts to, token included (`SERVICE_WEBHOOKS_DEV_URL`). */
  readonly report_url: string;
  /** When a receiver last reported (ISO 8601), `null` if none has. */
  readonly last_report_at: string | null;
  /** How many deliveries the history keeps. */
  readonly history_limit: number;
  /** Where the history is kept, `null` when in memory only. */
  readonly data_file: string | null;
}

/** The body of `POST /_dev/api/send`: an event type (a fresh sample), or an edited event, and a case. */
export interface SendRequest {
  /** Send a fresh sample of this type. */
  readonly type?: string;
  /** Send this event as it is (edited in the page), re-signed with the registration's secret. */
  readonly event?: Record<string, unknown>;
  /**
   * What to send: `sent` (a delivery as the service makes it, retried on failure), or a case a receiver
   * must handle: `forged_signature` (signed with another secret; expect 401), `stale_created`
   * (`created` two days old; signed correctly), `concurrent_copies` (two deliveries of one event at
   * the same moment; expect one handled and one duplicate or 409). @default 'sent'
   */
  readonly case?: SendCase;
}

/** The inbox panel: its figures and the first page of dead letters. */
export interface InboxView {
  readonly engine: string;
  readonly stats: InboxStats;
  readonly dead_letters: readonly DeadLetter[];
  /** More dead letters exist than are listed. */
  readonly more: boolean;
}

/** What the event stream sends: `event: <type>` and `data: <JSON>`. */
export type DashboardEvent =
  /** A delivery was created or changed (an attempt began or ended, a report joined it). */
  | { readonly type: 'delivery'; readonly data: DevDelivery }
  /** The history was cleared. */
  | { readonly type: 'cleared'; readonly data: Record<string, never> }
  /** The inbox's figures, every two seconds while a page listens (only with an inbox). */
  | { readonly type: 'inbox'; readonly data: InboxView }
  /** A receiver reported (the page shows that the receiver's side is connected). */
  | { readonly type: 'report'; readonly data: { readonly at: string } };
