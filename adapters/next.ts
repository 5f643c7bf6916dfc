// node:http for types only: this module is loaded by Edge routes too, where node:* does not exist.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type AnyWebhooks, RawBodyUnavailableError, readsTenant, type Webhooks } from 'service-webhooks/core';
import { answerWebRequest } from './internal/answer-web-request.js';
import { createNodeListener, stringParams, writeNodeResponse } from './internal/node-listener.js';

/**
 * An App Router route handler: `export const POST = nextRouteHandler(webhooks)`. Next.js passes the
 * dynamic segments as its second argument (a promise of them since Next.js 15), which a receiver with
 * `tenant: { from: { param } }` reads.
 */
export type NextRouteHandler = (request: Request, context?: NextRouteContext) => Promise<Response>;

/** What Next.js passes an App Router route handler besides the request: its dynamic segments. */
export interface NextRouteContext {
  readonly params?:
    | PromiseLike<Readonly<Record<string, string | string[] | undefined>>>
    | Readonly<Record<string, string | string[] | undefined>>;
}

/** A Pages Router API route: `export default nextPagesHandler(webhooks)`. */
export type NextPagesHandler = (request: IncomingMessage, response: ServerResponse) => Promise<void>;

const PAGES_FIX =
  "Next.js parsed the body before the webhook route. Add `export const config = { api: { bodyParser: false } }` to this API route's file.";
const APP_FIX =
  'something read the request body before the webhook route handler; pass it the untouched Request.';

/**
 * An App Router route handler (`app/.../route.ts`) for the Node.js and the Edge runtime. Reads the exact
 * bytes of the request; Next.js answers other methods 405 itself since only `POST` is exported.
 *
 * @example
 * ```ts
 * // app/webhooks/route.ts
 * import { createWebhooks } from 'service-webhooks';
 * import { nextRouteHandler } from 'service-webhooks/next';
 *
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! });
 * webhooks.on('user.created', async (event) => console.log(event.data.email));
 *
 * export const POST = nextRouteHandler(webhooks);
 * // export const runtime = 'edge'; // works there too
 * ```
 */
export function nextRouteHandler(webhooks: AnyWebhooks): NextRouteHandler {
  const receiver = webhooks as Webhooks;
  // Asked once: the segments are awaited only for a receiver with `tenant`.
  const withTarget = readsTenant(receiver);
  return async (request, context) => {
    const params = withTarget ? stringParams(await context?.params) : undefined;
    const { status, headers, body } = await answerWebRequest(receiver, request, APP_FIX, params);
    return new Response(body, { status, headers });
  };
}

/**
 * A Pages Router API route (`pages/api/...ts`). Next.js must not parse the body, so the route's file
 * exports `config = { api: { bodyParser: false } }`; if it does not, every delivery is answered 500
 * `raw_body_unavailable` and the error reported to `onError` says so. Anything but POST is answered 405.
 *
 * @example
 * ```ts
 * // pages/api/webhooks.ts
 * import { createWebhooks } from 'service-webhooks';
 * import { nextPagesHandler } from 'service-webhooks/next';
 *
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! });
 * webhooks.on('user.created', async (event) => console.log(event.data.email));
 *
 * export const config = { api: { bodyParser: false } };
 * export default nextPagesHandler(webhooks);
 * ```
 */
export function nextPagesHandler(webhooks: AnyWebhooks): NextPagesHandler {
  // A Pages route's dynamic segments are in `req.query` (`pages/api/webhooks/[account].ts`).
  const listener = createNodeListener(webhooks as Webhooks, PAGES_FIX, (request) =>
    stringParams((request as { query?: unknown }).query),
  );
  return async (request: IncomingMessage & { body?: unknown }, response) => {
    // Next's parser leaves a string or an object on req.body, never the exact bytes: refuse even a string.
    if (request.body !== undefined) {
      return writeNodeResponse(
        response,
        (webhooks as Webhooks).reject(new RawBodyUnavailableError(PAGES_FIX)),
      );
    }
    return listener(request, response);
  };
}
