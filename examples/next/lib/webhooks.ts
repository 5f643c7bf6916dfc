import { createWebhooks, rateLimitedError, type Webhooks } from 'service-webhooks';

/**
 * The receiver each webhook route serves. Every route module gets its own (Edge and Node.js routes
 * cannot share memory); give them a shared store, such as service-webhooks/redis, in production.
 */
export function createReceiver(): Webhooks {
  const webhooks = createWebhooks({
    // A function, read on the first delivery: `next build` loads route modules, and builds without it.
    secret: () => process.env.WEBHOOK_SECRET!,
    ...(process.env.WEBHOOK_MAX_BODY_BYTES
      ? { maxBodyBytes: Number(process.env.WEBHOOK_MAX_BODY_BYTES) }
      : {}),
  });

  webhooks.on('user.created', async (event) => {
    console.log(`user.created ${event.id} ${event.data.email}`);
  });

  // For the test suite: hand every verified, deduplicated event to the test's own handlers over HTTP,
  // so its shared adapter cases can observe what ran here. Unset in real deployments.
  const relay = process.env.WEBHOOK_TEST_RELAY_URL;
  if (relay) {
    webhooks.onAny(async (event, { signal }) => {
      const response = await fetch(relay, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(event),
        signal,
      });
      // The relay rate-limits as a downstream API would (429, Retry-After): the handler says so.
      if (response.status === 429) throw rateLimitedError(response);
      if (!response.ok) throw new Error(`The relayed handler failed with ${response.status}.`);
    });
  }
  return webhooks;
}
