// A real Hono app (on Node via @hono/node-server) receiving the service's webhooks.
// Run: WEBHOOK_SECRET=... npx tsx examples/hono/server.ts. On Bun, Deno or Workers, export app instead.
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { createWebhooks } from 'service-webhooks';
import { webHandler } from 'service-webhooks/web';

const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! });
webhooks.on('user.created', (event) => {
  console.log('user.created', event.data.email);
});

const handle = webHandler(webhooks);
const app = new Hono();
app.post('/webhooks', (c) => handle(c.req.raw)); // the untouched Request: its raw bytes are signed

serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 3000) }, (info) => {
  console.log(`Listening on http://localhost:${info.port}/webhooks`);
});
