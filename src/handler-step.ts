/**
 * One handler's part in a delivery (or an inbox worker's run): which handler, in the order they ran,
 * and how it ended. Told to a telemetry plug-in as each handler settles
 * (`DeliveryTelemetry.handlerSettled`) and, for a logger that asks for them (`WANTS_HANDLER_STEPS`),
 * listed on the delivery's log record as `handlers`.
 *
 * @example
 * ```ts
 * import type { HandlerStep } from 'service-webhooks';
 * const step: HandlerStep = { index: 0, name: 'sendWelcomeMail', outcome: 'succeeded', durationMs: 1.2 };
 * ```
 */
export interface HandlerStep {
  /** Its place among the event's handlers, from 0 (the order they were registered in). */
  readonly index: number;
  /** The handler function's own name, `anonymous` when it has none (an arrow function passed inline). */
  readonly name: string;
  /** `failed` when it threw or rejected; the failure itself is the delivery's error. */
  readonly outcome: 'succeeded' | 'failed';
  /** From its call to its settling, in milliseconds. */
  readonly durationMs: number;
}

/**
 * The key by which a logger asks for each delivery's {@link HandlerStep}s on its record (`handlers`).
 * Timing every handler is work a receiver does only when asked: without this key on the logger (and
 * without a telemetry plug-in), handlers run as they always did. `devReporter()` from
 * `service-webhooks/dev` carries it, so the dashboard shows which handlers ran. A registered symbol, so
 * an ESM and a CJS copy of the package agree on it.
 *
 * @example
 * ```ts
 * import { createWebhooks, WANTS_HANDLER_STEPS } from 'service-webhooks';
 * const logger = {
 *   [WANTS_HANDLER_STEPS]: true,
 *   info(record: { handlers?: readonly { name: string }[] }) {
 *     console.log(record.handlers?.map((step) => step.name));
 *   },
 *   warn() {},
 *   error() {},
 * };
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, logger });
 * ```
 */
export const WANTS_HANDLER_STEPS: unique symbol = Symbol.for('service-webhooks.wantsHandlerSteps');

/** Whether `logger` asked for the handler steps on its records. */
export function wantsHandlerSteps(logger: object | undefined): boolean {
  return (
    logger !== undefined && (logger as { [WANTS_HANDLER_STEPS]?: unknown })[WANTS_HANDLER_STEPS] === true
  );
}
