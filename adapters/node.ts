import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  PayloadTooLargeError,
  RawBodyUnavailableError,
  type WebhookResponse,
  type Webhooks,
} from 'service-webhooks';
import { readNodeBody } from './internal/read-node-body.js';

/** A `(req, res)` listener that also works as Connect-style middleware. */
export type NodeWebhookHandler = (
  request: IncomingMessage,
  response: ServerResponse,
  next?: (error?: unknown) => void,
) => Promise<void>;

const CONSUMED_FIX =
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
  return async (request, response, next) => {
    try {
      const read = await readNodeBody(request, webhooks.maxBodyBytes);
      if (read.kind === 'too_large') {
        // Stop the sender from streaming the rest: answer, then close the connection.
        response.shouldKeepAlive = false;
        response.once('finish', () => request.destroy());
        return writeResponse(response, webhooks.reject(new PayloadTooLargeError()));
      }
      if (read.kind === 'consumed')
        return writeResponse(response, webhooks.reject(new RawBodyUnavailableError(CONSUMED_FIX)));
      writeResponse(
        response,
        await webhooks.handle({
          body: read.body,
          headers: request.headers,
          method: request.method ?? 'POST',
        }),
      );
    } catch (error) {
      // Only a broken connection gets here (the core never throws); let the host app's error handling see it.
      if (next) next(error);
      else request.destroy(error as Error);
    }
  };
}

/** Write the core's answer as it is. */
export function writeResponse(response: ServerResponse, result: WebhookResponse): void {
  response.writeHead(result.status, result.headers).end(result.body);
}
