import {
  PayloadTooLargeError,
  RawBodyUnavailableError,
  type WebhookResponse,
  type Webhooks,
} from 'service-webhooks';
import { readWebBody } from './internal/read-web-body.js';

/** A Fetch handler: `Request` in, `Response` out. */
export type WebWebhookHandler = (request: Request) => Promise<Response>;

const FIX =
  'the request body was read before the webhook handler (request.bodyUsed). Pass the untouched Request (in Hono, c.req.raw before any validator or c.req.json()).';

/**
 * Receive deliveries on any Fetch runtime: Hono, Bun, Deno, Cloudflare Workers, edge functions. Web
 * APIs only (no `node:*`, no Buffer). The body is read at most `maxBodyBytes + 1` bytes deep. The
 * handler owns what it is given: anything but POST is answered 405.
 *
 * @example
 * ```ts
 * import { serve } from '@hono/node-server';
 * import { Hono } from 'hono';
 * import { createWebhooks } from 'service-webhooks';
 * import { webHandler } from 'service-webhooks/web';
 *
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! });
 * webhooks.on('user.created', (event) => console.log('user.created', event.data.email));
 *
 * const handle = webHandler(webhooks);
 * const app = new Hono();
 * app.post('/webhooks', (c) => handle(c.req.raw));
 * serve({ fetch: app.fetch, port: 3000 });
 * // Bun, Deno, Workers: export default { fetch: webHandler(webhooks) };
 * ```
 */
export function webHandler(webhooks: Webhooks): WebWebhookHandler {
  return async (request) => {
    if (request.bodyUsed) return toResponse(webhooks.reject(new RawBodyUnavailableError(FIX)));
    const read = await readWebBody(request, webhooks.maxBodyBytes);
    if (read.kind === 'too_large') return toResponse(webhooks.reject(new PayloadTooLargeError()));
    return toResponse(
      await webhooks.handle({ body: read.body, headers: request.headers, method: request.method }),
    );
  };
}

function toResponse({ status, headers, body }: WebhookResponse): Response {
  return new Response(body, { status, headers });
}
