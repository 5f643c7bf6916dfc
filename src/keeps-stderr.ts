import type { WebhookLogger } from './types.js';

/**
 * The key by which a logger says it only looks on: it receives every delivery record, yet the receiver
 * goes on saying on stderr what it says without a logger (a failure with no `onError` listener, a
 * receiver that refuses every delivery for its own setup). `devReporter()` from `service-webhooks/dev`
 * is such a logger, so that leaving it in production hides nothing. A registered symbol, so an ESM and a
 * CJS copy of the package agree on it.
 *
 * @example
 * ```ts
 * import { createWebhooks, KEEPS_STDERR } from 'service-webhooks';
 * const counter = {
 *   [KEEPS_STDERR]: true,
 *   info() {},
 *   warn() {},
 *   error() {},
 * };
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, logger: counter });
 * ```
 */
export const KEEPS_STDERR: unique symbol = Symbol.for('service-webhooks.keepsStderr');

/** Whether `logger` shows failures itself, so the receiver need not say them on stderr. */
export function speaksForItself(logger: WebhookLogger | undefined): boolean {
  return logger !== undefined && (logger as { [KEEPS_STDERR]?: unknown })[KEEPS_STDERR] !== true;
}
