import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AnyWebhooks, Webhooks } from 'service-webhooks/core';
import { createNodeListener, stringParams } from './internal/node-listener.js';

/**
 * An Express request handler (Express 4 and 5). Typed with `node:http` types, which Express's `Request`
 * and `Response` extend, so it fits both majors and users need no `@types/express` of a given version.
 */
export type ExpressWebhookHandler = (
  request: IncomingMessage & { body?: unknown },
  response: ServerResponse,
  next: (error?: unknown) => void,
) => Promise<void>;

const FIX =
  "mount service-webhooks/express before express.json(), or use express.raw({ type: 'application/json' }) on this route.";

/**
 * Receive deliveries in Express. Reads the raw body itself (within `maxBodyBytes` and the receiver's
 * `bodyBudget`), or takes the Buffer left by `express.raw()` (give that a `limit` of at least
 * `maxBodyBytes`; its default is 100 kB). When `express.json()` already parsed the body, the signed
 * bytes are gone: the sender gets 500 `raw_body_unavailable` (so it retries once fixed) and `onError`
 * gets the fix. A client that hangs up mid-body is not handed to `next`, so Express prints nothing for
 * it; other stream errors are. Mounted with `app.post` it sees only POST; mounted with `app.use` or
 * `app.all` it answers 405 (with `Allow: POST`) to other methods.
 *
 * @example
 * ```ts
 * import express from 'express';
 * import { createWebhooks } from 'service-webhooks';
 * import { expressWebhooks } from 'service-webhooks/express';
 *
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! });
 * webhooks.on('user.created', (event) => console.log('user.created', event.data.email));
 *
 * const app = express();
 * app.post('/webhooks', expressWebhooks(webhooks)); // before app.use(express.json())
 * app.use(express.json());
 * app.listen(3000);
 * ```
 */
export function expressWebhooks(webhooks: AnyWebhooks): ExpressWebhookHandler {
  return createNodeListener(webhooks as Webhooks, FIX, expressParams);
}

/** Express's `req.params`: the route's `:account` for a receiver with `tenant`. */
function expressParams(request: IncomingMessage): Readonly<Record<string, string | undefined>> | undefined {
  return stringParams((request as { params?: unknown }).params);
}
