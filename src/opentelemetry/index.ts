/**
 * `service-webhooks/opentelemetry`: OpenTelemetry traces and metrics for a receiver, as its
 * `telemetry` option. Needs `@opentelemetry/api` in the app (an optional peer dependency of this
 * subpath only); without the option, no module of `@opentelemetry/*` is loaded.
 *
 * @example
 * ```ts
 * import { createWebhooks } from 'service-webhooks';
 * import { openTelemetry } from 'service-webhooks/opentelemetry';
 *
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, telemetry: openTelemetry() });
 * ```
 *
 * @module
 */
export { ATTRIBUTES } from './attributes.js';
export { type OpenTelemetryOptions, openTelemetry, SCOPE_NAME } from './open-telemetry.js';
