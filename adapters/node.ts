import type { AnyWebhooks, Webhooks } from 'service-webhooks/core';
import { createNodeListener, type NodeListener } from './internal/node-listener.js';

/** A `(req, res)` listener that also works as Connect-style middleware. */
export type NodeWebhookHandler = NodeListener;

const FIX =
  'a body parser read the request before the webhook handler. Mount the webhook handler before any JSON body parser, or keep the raw bytes on req.rawBody.';

/**
 * Receive deliveries with `node:http`, or mount as Connect-style middleware on the webhook path. The
 * body is read within `maxBodyBytes` and the receiver's `bodyBudget`; the handler owns its route:
 * anything but POST is answered 405. A slow sender is bounded by the server's `requestTimeout`, so
 * pass one to `createServer` (see "Slow senders" in the docs, https://service-webhooks.github.io/service-webhooks/frameworks/#slow-senders-server-timeouts).
 *
 * @example
 * ```ts
 * import { createServer } from 'node:http';
 * import { createWebhooks } from 'service-webhooks';
 * import { nodeHandler } from 'service-webhooks/node';
 *
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! });
 * webhooks.on('user.created', (event) => console.log(event.data.email));
 * const timeouts = { requestTimeout: 10_000, headersTimeout: 5_000, connectionsCheckingInterval: 1_000 };
 * createServer(timeouts, nodeHandler(webhooks)).listen(3000);
 * ```
 */
export function nodeHandler(webhooks: AnyWebhooks): NodeWebhookHandler {
  // No route parameters in node:http: a receiver with `tenant` reads `req.url` (`{ path }`, `{ query }`).
  return createNodeListener(webhooks as Webhooks, FIX);
}
