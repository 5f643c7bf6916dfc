// The web process: verify, deduplicate, write each event to the inbox (BullMQ on Redis) and answer
// 200 as soon as Redis holds it. No handler runs here; the worker process (worker.ts) runs them.
// Run: WEBHOOK_SECRET=... REDIS_URL=redis://... npx tsx examples/inbox/web.ts
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bullmqInbox } from 'service-webhooks/bullmq';
import { nodeHandler } from 'service-webhooks/node';
import { createReceiver, queueName, redisUrl } from './receiver.js';

// From a URL the inbox makes a client that fails fast: while Redis is down, deliveries get 503.
const inbox = bullmqInbox({ connection: redisUrl, queueName });
const { webhooks, redis } = createReceiver(inbox);

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
  void inbox.close().finally(() => redis.disconnect());
});
