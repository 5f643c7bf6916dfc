import type { Webhooks } from './types.js';

/**
 * Marks a receiver with the `tenant` option, which wants the request's route parameters and URL in
 * `handle()` (see `HandleInput.params` and `url`). A registered symbol: the adapters and the core may
 * be loaded as separate copies.
 */
export const READS_TENANT: unique symbol = Symbol.for('service-webhooks.readsTenant');

/**
 * @internal For adapters: whether the receiver reads a tenant from the request, asked once when the
 * adapter is made, so that an adapter of a receiver without `tenant` passes nothing more per delivery.
 *
 * @example
 * ```ts
 * const withTarget = readsTenant(webhooks);
 * const input = withTarget ? { body, headers, method, params: req.params, url: req.url } : { body, headers, method };
 * ```
 */
export function readsTenant(webhooks: Webhooks<never, never> | object): boolean {
  return (webhooks as { [READS_TENANT]?: boolean })[READS_TENANT] === true;
}
