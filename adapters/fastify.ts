import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import {
  type AnyWebhooks,
  answerNow,
  type HandleInput,
  readsTenant,
  type WebhookResponse,
  type Webhooks,
} from 'service-webhooks/core';
import { stringParams } from './internal/node-listener.js';
import { type ReadDone, readNodeStream, type StreamBody } from './internal/read-node-body.js';
import { refusedBody } from './internal/refused-body.js';

/** Options of the `fastifyWebhooks` plugin. */
export interface FastifyWebhooksOptions {
  /**
   * The receiver built with `createWebhooks`. With `tenant: { from: { param: 'account' } }`, give a
   * `path` with that parameter (`'/webhooks/:account'`): the route's `request.params` name the tenant.
   */
  webhooks: AnyWebhooks;
  /**
   * The route the sender posts to. Fastify's `prefix` does not apply to this plugin (it is wrapped
   * with fastify-plugin), so give the full path.
   * @default '/webhooks'
   */
  path?: string;
}

/**
 * A Fastify 5 plugin that adds the webhook route. The route reads the raw bytes itself (a catch-all
 * parser over the payload stream, within `maxBodyBytes` and the receiver's `bodyBudget`) inside its own
 * encapsulated context, so the app's other routes keep their JSON parsing. A body over the limit gets
 * 413 `payload_too_large`, one that does not fit the budget 503 `receiver_busy`; methods other than
 * POST get 405. The route ignores Content-Type, as the signature does.
 *
 * @example
 * ```ts
 * import Fastify from 'fastify';
 * import { createWebhooks } from 'service-webhooks';
 * import { fastifyWebhooks } from 'service-webhooks/fastify';
 *
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! });
 * webhooks.on('user.created', (event) => console.log('user.created', event.data.email));
 *
 * const app = Fastify({ requestTimeout: 10_000 }); // Fastify's default, 0, never times an upload out
 * await app.register(fastifyWebhooks, { webhooks, path: '/webhooks' });
 * await app.listen({ port: 3000 });
 * ```
 */
export const fastifyWebhooks: FastifyPluginAsync<FastifyWebhooksOptions> = fastifyPlugin(
  async (fastify: FastifyInstance, { webhooks: receiver, path = '/webhooks' }: FastifyWebhooksOptions) => {
    const webhooks = receiver as Webhooks;
    const { maxBodyBytes, bodyBudget } = webhooks;
    // Asked once: a receiver with `tenant` gets the route's `request.params` and URL too.
    const withTarget = readsTenant(webhooks);
    // Reading the payload stream here rather than with `parseAs: 'buffer'` is what lets each chunk be
    // taken from the budget; what it finds, bytes or a refusal, becomes the route's `request.body`.
    // Fastify's own `done` is the reader's callback: no promise and no wrapper per request.
    const readBody = (request: FastifyRequest, payload: IncomingMessage, done: ReadDone<StreamBody>): void =>
      readNodeStream(payload, request.headers['content-length'], maxBodyBytes, bodyBudget, done);
    // The route returns the body for Fastify to send, as an async handler would, without an async
    // function's own promise; a failure still reaches Fastify's error handling.
    const answer = (reply: FastifyReply, { status, headers, body }: WebhookResponse): string => {
      reply.code(status).headers(headers);
      return body;
    };
    // The child context is what scopes the parser: parsers added here never reach the parent's routes.
    await fastify.register(async (child) => {
      child.removeAllContentTypeParsers();
      child.addContentTypeParser('*', readBody);
      child.all(path, { onRequest: ignoreContentType }, (request, reply) => {
        // No body at all (no Content-Length, no Transfer-Encoding): Fastify runs no parser.
        const read = (request.body as StreamBody | undefined) ?? NO_BODY;
        switch (read.kind) {
          case 'body': {
            const { headers, method } = request;
            const input: HandleInput = withTarget
              ? { body: read.body, headers, method, params: stringParams(request.params), url: request.url }
              : { body: read.body, headers, method };
            // Returned as it is when the core answers at once, which Fastify sends without a promise.
            const sent = answerNow(webhooks, input);
            return sent instanceof Promise ? sent.then((late) => answer(reply, late)) : answer(reply, sent);
          }
          case 'too_large':
          case 'busy':
            // Close the connection rather than drain the rest of a refused upload.
            return answer(reply.header('connection', 'close'), refusedBody(webhooks, read.kind));
          case 'aborted':
            // The client went away mid-body; Fastify writes nothing to a destroyed socket.
            return reply.code(400).send();
        }
      });
    });
  },
  { fastify: '5.x', name: 'service-webhooks' },
);

const NO_BODY: StreamBody = Object.freeze({ kind: 'body', body: new Uint8Array(0) });

/**
 * Fastify checks Content-Type before it picks a parser and answers a malformed one (`@@@`, `text/`,
 * an empty value) 415 itself, which no parser can prevent; its documented remedy is an `onRequest`
 * hook that rewrites the header. The signature covers the bytes whatever type they claim and the core
 * ignores the header, so this route drops it: every body then goes to the catch-all parser.
 * https://fastify.dev/docs/latest/Reference/ContentTypeParser/
 */
function ignoreContentType(request: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  // The raw headers: `request.headers` may be a merged copy when a hook replaced it. Set to undefined
  // rather than deleted: a delete turns the headers object into a slow dictionary for every later read
  // (measured: about 2% of the route's CPU in the delete alone).
  const headers = request.raw.headers;
  if (headers['content-type'] !== undefined) headers['content-type'] = undefined;
  done();
}
