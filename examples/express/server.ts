// A real Express app receiving the service's webhooks. Run: WEBHOOK_SECRET=... npx tsx examples/express/server.ts
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createWebhooks } from 'service-webhooks';
import { expressWebhooks } from 'service-webhooks/express';

const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! });
webhooks.on('user.created', (event) => {
  console.log('user.created', event.data.email);
});

const app = express();
app.post('/webhooks', expressWebhooks(webhooks)); // before express.json(): it needs the raw bytes
app.use(express.json()); // the rest of the app keeps its JSON parsing

const server = app.listen(Number(process.env.PORT ?? 3000), () => {
  console.log(`Listening on http://localhost:${(server.address() as AddressInfo).port}/webhooks`);
});
