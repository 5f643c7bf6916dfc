// The web process: verify, deduplicate, publish each event to the inbox (a persistent message in a
// durable quorum queue) and answer 200 once RabbitMQ has confirmed it. No handler runs here; worker.ts
// runs them.
// Run: WEBHOOK_SECRET=... AMQP_URL=amqp://... DATABASE_URL=postgres://... npx tsx examples/rabbitmq/web.ts
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { nodeHandler } from 'service-webhooks/node';
import { rabbitMQInbox } from 'service-webhooks/rabbitmq';
import { amqpUrl, createReceiver, queue } from './receiver.js';

const inbox = rabbitMQInbox({ url: amqpUrl, queue });
const { webhooks, pool } = await createReceiver(inbox);

const handle = nodeHandler(webhooks);
const timeouts = { requestTimeout: 10_000, headersTimeout: 5_000 };
const server = createServer(timeouts, (request, response) => {
  if (request.url === '/webhooks') return handle(request, response);
  response.writeHead(404).end();
});
server.listen(Number(process.env.PORT ?? 3000), () => {
  console.log(`Listening on http://localhost:${(server.address() as AddressInfo).port}/webhooks`);
});
process.once('SIGTERM', () => {
  server.close();
  void inbox.close().finally(() => pool.end());
});
