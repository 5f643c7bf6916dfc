// A real Fastify app receiving the service's webhooks. Run: WEBHOOK_SECRET=... npx tsx examples/fastify/server.ts
import Fastify from 'fastify';
import { createWebhooks } from 'service-webhooks';
import { fastifyWebhooks } from 'service-webhooks/fastify';

const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! });
webhooks.on('user.created', (event) => {
  console.log('user.created', event.data.email);
});

// Fastify's default requestTimeout (0) never times an upload out; 10 s bounds a stalled sender.
const app = Fastify({ requestTimeout: 10_000 });
// The raw body reader stays on this route; the app's other routes keep parsing JSON.
await app.register(fastifyWebhooks, { webhooks, path: '/webhooks' });

const address = await app.listen({ port: Number(process.env.PORT ?? 3000) });
console.log(`Listening on ${address}/webhooks`);
