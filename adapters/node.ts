import type { Webhooks } from 'service-webhooks';
import { createNodeListener, type NodeListener } from './internal/node-listener.js';

/** A `(req, res)` listener that also works as Connect-style middleware. */
export type NodeWebhookHandler = NodeListener;

const FIX =
  'a body parser read the request before the webhook handler. Mount the webhook handler before any JSON body parser, or keep the raw bytes on req.rawBody.';

/**
 * Receive deliveries with `node:http`, or mount as Connect-style middleware on the webhook path. The
 * handler owns its route: anything but POST is answered 405.
 *
 * @example
 * ```ts
 * import { createServer } from 'node:http';
 * import { createWebhooks } from 'service-webhooks';
 * import { nodeHandler } from 'service-webhooks/node';
 *
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! });
 * webhooks.on('user.created', (event) => console.log(event.data.email));
 * createServer(nodeHandler(webhooks)).listen(3000);
 * ```
 */
export function nodeHandler(webhooks: Webhooks): NodeWebhookHandler {
  return createNodeListener(webhooks, FIX);
}
