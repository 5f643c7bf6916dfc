// A Cloudflare Worker receiving the service's webhooks with service-webhooks/web.
// Run: `wrangler dev` in this folder (WEBHOOK_SECRET in .dev.vars), or deploy it with `wrangler deploy`.
//
// Workers have no process.env: the secret is a binding. It is given as a function, which the receiver
// calls on the first delivery (inside fetch) and keeps for the isolate, never while the module loads:
// a missing secret answers 503 secret_unavailable (the reason goes to onError) instead of a Worker that
// does not start.
import { env } from 'cloudflare:workers';
import { createWebhooks } from 'service-webhooks';
import { eventSchemas } from 'service-webhooks/schemas';
import { webHandler } from 'service-webhooks/web';

const webhooks = createWebhooks({
  secret: () => env.WEBHOOK_SECRET,
  maxBodyBytes: 16 * 1024, // the service's events are a few KB; refuse more before reading it
  schemas: eventSchemas, // each event checked against the spec before a handler sees it
});
webhooks.on('user.created', (event) => {
  console.log('user.created', event.id, event.data.email);
});

const handle = webHandler(webhooks);

export default {
  // Every method goes to the handler: it answers 405 (Allow: POST) to all but POST.
  fetch: (request: Request): Promise<Response> | Response =>
    new URL(request.url).pathname === '/webhooks'
      ? handle(request)
      : new Response('Not found', { status: 404 }),
};
