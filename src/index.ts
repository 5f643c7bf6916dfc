/**
 * service-webhooks: receive the service's webhooks safely. Verify the signature over the raw bytes,
 * deduplicate retries and races by event id, route to typed handlers.
 *
 * Everything of `service-webhooks/core`, re-exported by its package name so that ESM and CommonJS each
 * load the core once (its error classes stay `instanceof`-comparable across every subpath), plus the
 * in-process {@link MemoryStore} and a {@link createWebhooks} that uses one when no `store` is given.
 *
 * @example
 * ```ts
 * import { createWebhooks } from 'service-webhooks';
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! });
 * webhooks.on('user.created', (event) => console.log(event.data.email));
 * ```
 * @packageDocumentation
 */

import {
  createWebhooks as createWithStore,
  type EventSchemas,
  type IdempotencyStore,
  type NoSchemas,
  type TenantWebhooksOptions,
  type Webhooks,
  type WebhooksOptions,
} from 'service-webhooks/core';
import { MemoryStore } from './memory-store.js';

export * from 'service-webhooks/core';
export { MemoryStore, type MemoryStoreOptions } from './memory-store.js';

/**
 * Create a webhook receiver. Options are checked here, and a mistake throws a `ConfigurationError`
 * that says what to change. Without `store`, events are remembered by a new {@link MemoryStore} in this
 * process; bring a shared store when several processes receive deliveries (and import `createWebhooks`
 * from `service-webhooks/core` then, to leave `MemoryStore` and lru-cache out of a bundle).
 *
 * @example
 * ```ts
 * import { createWebhooks } from 'service-webhooks';
 *
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! });
 * webhooks.on('user.created', async (event) => {
 *   await sendWelcomeMail(event.data.email);
 * });
 * webhooks.on('payment.*', async (event, { signal }) => {
 *   await ledger.record(event, { signal });
 * });
 * ```
 *
 * @example
 * ```ts
 * // One route for every account of a platform app: each account's secret, scope and ctx.tenant.
 * const platform = createWebhooks({
 *   tenant: { from: { param: 'account' }, secret: (account) => db.webhookSecrets(account) },
 * });
 * platform.on('user.created', (event, ctx) => console.log(ctx.tenant, event.data.email));
 * app.post('/webhooks/:account', expressWebhooks(platform));
 * ```
 */
export function createWebhooks<Schemas extends EventSchemas = NoSchemas, Tenant extends string = string>(
  options: TenantWebhooksOptions<Schemas, Tenant>,
): Webhooks<Schemas, Tenant>;
export function createWebhooks<Schemas extends EventSchemas = NoSchemas>(
  options: WebhooksOptions<Schemas>,
): Webhooks<Schemas>;
export function createWebhooks(
  options: WebhooksOptions | TenantWebhooksOptions<EventSchemas, string>,
): Webhooks<EventSchemas, string> | Webhooks<EventSchemas> {
  // Anything but an options object without a store goes on as given: the core says what is wrong.
  if (typeof options !== 'object' || options === null || options.store !== undefined)
    return createWithStore(options as WebhooksOptions & { store: IdempotencyStore });
  return createWithStore({ ...options, store: new MemoryStore() } as WebhooksOptions & {
    store: IdempotencyStore;
  });
}
