import { isKnownEventType } from 'service-webhooks/core';

/**
 * Attribute names, in OpenTelemetry's semantic-convention style: the general ones where a convention
 * exists (`http.response.status_code`, `error.type`), the `webhook.*` namespace for the rest.
 *
 * @example
 * ```ts
 * const failed = spans.filter((span) => span.attributes[ATTRIBUTES.outcome] === 'failed');
 * ```
 */
export const ATTRIBUTES = Object.freeze({
  eventId: 'webhook.event.id',
  eventType: 'webhook.event.type',
  outcome: 'webhook.outcome',
  secretIndex: 'webhook.secret.index',
  /** The tenant of a receiver with `tenant`: a span attribute only, never a metric's. */
  tenant: 'webhook.tenant',
  attempt: 'webhook.attempt',
  replayId: 'webhook.replay.id',
  late: 'webhook.late',
  statusCode: 'http.response.status_code',
  errorType: 'error.type',
  queue: 'messaging.destination.name',
  handlerIndex: 'webhook.handler.index',
  handlerName: 'webhook.handler.name',
  handlerOutcome: 'webhook.handler.outcome',
  handlerDurationMs: 'webhook.handler.duration_ms',
  throttleReason: 'webhook.throttle.reason',
} as const);

/**
 * An event type as a metric attribute: one of the nine documented types, or `unknown`. Metric
 * attributes must stay bounded; a type the service adds later is counted as `unknown` until this
 * library documents it (spans carry it as it is, once verified).
 */
export function boundedEventType(type: string | undefined): string {
  return type !== undefined && isKnownEventType(type) ? type : 'unknown';
}
