// A Bun server receiving the service's webhooks with service-webhooks/web.
// Run: WEBHOOK_SECRET=... bun run examples/bun/server.ts
import { createWebhooks } from 'service-webhooks';
import { eventSchemas } from 'service-webhooks/schemas';
import { webHandler } from 'service-webhooks/web';

const webhooks = createWebhooks({
  secret: Bun.env.WEBHOOK_SECRET!,
  maxBodyBytes: 16 * 1024, // the service's events are a few KB; refuse more before reading it
  schemas: eventSchemas, // each event checked against the spec before a handler sees it
});
webhooks.on('user.created', (event) => {
  console.log('user.created', event.id, event.data.email);
});

const server = Bun.serve({
  port: Number(Bun.env.PORT ?? 3000),
  // A function route takes every method: the handler answers 405 (Allow: POST) to all but POST.
  routes: { '/webhooks': webHandler(webhooks) },
  fetch: () => new Response('Not found', { status: 404 }),
});
console.log(`Listening on ${new URL('/webhooks', server.url)}`);
