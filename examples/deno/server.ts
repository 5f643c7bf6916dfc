// A Deno server receiving the service's webhooks with service-webhooks/web.
// Run in a project that has service-webhooks in package.json (`deno install` or `npm install` fills
// node_modules): WEBHOOK_SECRET=... deno run --allow-net --allow-env=WEBHOOK_SECRET,PORT server.ts
import { createWebhooks } from 'service-webhooks';
import { eventSchemas } from 'service-webhooks/schemas';
import { webHandler } from 'service-webhooks/web';

const webhooks = createWebhooks({
  secret: Deno.env.get('WEBHOOK_SECRET')!,
  maxBodyBytes: 16 * 1024, // the service's events are a few KB; refuse more before reading it
  schemas: eventSchemas, // each event checked against the spec before a handler sees it
});
webhooks.on('user.created', (event) => {
  console.log('user.created', event.id, event.data.email);
});

const handle = webHandler(webhooks);
Deno.serve(
  {
    port: Number(Deno.env.get('PORT') ?? 3000),
    onListen: ({ port }) => console.log(`Listening on http://localhost:${port}/webhooks`),
  },
  // Every method goes to the handler: it answers 405 (Allow: POST) to all but POST.
  (request) =>
    new URL(request.url).pathname === '/webhooks'
      ? handle(request)
      : new Response('Not found', { status: 404 }),
);
