/**
 * What happened to one delivery: handled (2xx after running handlers or finding none), queued (2xx
 * once the inbox held it; a worker's run is logged as handled or failed), duplicate
 * (already handled), stale (2xx without running handlers: a newer event of its resource was handled
 * first, see the `ordering` option), rejected (4xx, the sender's fault) or failed (5xx, ours; the
 * sender retries).
 *
 * Its own module because both the logger's record (`types.ts`) and the telemetry plug-in's
 * contract (`telemetry.ts`) name it, and `types.ts` names the telemetry contract.
 *
 * @example
 * ```ts
 * import type { DeliveryOutcome } from 'service-webhooks';
 *
 * const alerting: ReadonlySet<DeliveryOutcome> = new Set(['failed']);
 * ```
 */
export type DeliveryOutcome = 'handled' | 'queued' | 'duplicate' | 'stale' | 'rejected' | 'failed';
