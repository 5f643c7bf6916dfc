import type { FastifyError, FastifyInstance, FastifyPluginAsync, FastifyReply } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import { PayloadTooLargeError, type WebhookResponse, type Webhooks } from 'service-webhooks';

/** Options of the `fastifyWebhooks` plugin. */
export interface FastifyWebhooksOptions {
  /** The receiver built with `createWebhooks`. */
  webhooks: Webhooks;
  /**
   * The route the sender posts to. Fastify's `prefix` does not apply to this plugin (it is wrapped
   * with fastify-plugin), so give the full path.
   * @default '/webhooks'
   */
  path?: string;
}

/**
 * A Fastify 5 plugin that adds the webhook route. The route keeps the raw bytes (a catch-all buffer
 * parser) inside its own encapsulated context, so the app's other routes keep their JSON parsing. Its
 * body limit is `maxBodyBytes` (413 `payload_too_large`); methods other than POST get 405.
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
 * const app = Fastify();
 * await app.register(fastifyWebhooks, { webhooks, path: '/webhooks' });
 * await app.listen({ port: 3000 });
 * ```
 */
export const fastifyWebhooks: FastifyPluginAsync<FastifyWebhooksOptions> = fastifyPlugin(
  async (fastify: FastifyInstance, { webhooks, path = '/webhooks' }: FastifyWebhooksOptions) => {
    // The child context is what scopes the parser: parsers added here never reach the parent's routes.
    await fastify.register(async (child) => {
      child.removeAllContentTypeParsers();
      const keepBytes = (_request: unknown, body: Buffer, done: (error: null, body: Buffer) => void) =>
        done(null, body);
      // The exact type the service sends is found by a map lookup; the catch-all takes any other.
      child.addContentTypeParser('application/json', { parseAs: 'buffer' }, keepBytes);
      child.addContentTypeParser('*', { parseAs: 'buffer' }, keepBytes);
      child.setErrorHandler((error: FastifyError, _request, reply) => {
        if (error.code !== 'FST_ERR_CTP_BODY_TOO_LARGE') throw error;
        // Close the connection rather than drain the rest of an oversized upload.
        reply.header('connection', 'close');
        return send(reply, webhooks.reject(new PayloadTooLargeError()));
      });
      child.all(path, { bodyLimit: webhooks.maxBodyBytes }, async (request, reply) => {
        const body = request.body instanceof Uint8Array ? request.body : new Uint8Array(0);
        return send(reply, await webhooks.handle({ body, headers: request.headers, method: request.method }));
      });
    });
  },
  { fastify: '5.x', name: 'service-webhooks' },
);

function send(reply: FastifyReply, { status, headers, body }: WebhookResponse): FastifyReply {
  return reply.code(status).headers(headers).send(body);
}
