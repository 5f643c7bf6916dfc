import type { AnyWebhooks, Webhooks } from 'service-webhooks/core';
import { answerWebRequest } from './internal/answer-web-request.js';

/**
 * A Fetch handler: `Request` in, `Response` out. For a receiver with `tenant`, a router's parameters
 * may be passed along (Hono's `c.req.param()`), for `tenant: { from: { param } }`.
 */
export type WebWebhookHandler = (
  request: Request,
  route?: { readonly params?: Readonly<Record<string, string | undefined>> },
) => Promise<Response>;

const FIX =
  'the request body was read before the webhook handler (request.bodyUsed). Pass the untouched Request (in Hono, c.req.raw before any validator or c.req.json()).';

/**
 * Receive deliveries on any Fetch runtime: Hono, Bun, Deno, Cloudflare Workers, edge functions. Web
 * APIs only (no `node:*`, no Buffer). The body is read at most `maxBodyBytes + 1` bytes deep, within
 * the receiver's `bodyBudget` (503 `receiver_busy` when it is spent). The handler owns what it is
 * given: anything but POST is answered 405.
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
 * // Bun, Deno: export default { fetch: webHandler(webhooks) }. Workers: give `secret` as a function
 * // (`() => env.WEBHOOK_SECRET`, from `cloudflare:workers`), read on the first delivery, not at load.
 * ```
 */
export function webHandler(webhooks: AnyWebhooks): WebWebhookHandler {
  return async (request, route) => {
    const { status, headers, body } = await answerWebRequest(
      webhooks as Webhooks,
      request,
      FIX,
      route?.params,
    );
    return new Response(body, { status, headers });
  };
}
