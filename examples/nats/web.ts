// The web process: verify, deduplicate, publish each event to the inbox stream and answer 200 once
// JetStream acknowledged storing it. No handler runs here; worker.ts runs them.
// Run: WEBHOOK_SECRET=... NATS_URL=nats://... REDIS_URL=redis://... npx tsx examples/nats/web.ts
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from '@nats-io/transport-node';
import { natsInbox } from 'service-webhooks/nats';
import { nodeHandler } from 'service-webhooks/node';
import { createReceiver, natsUrl, stream } from './receiver.js';

// Reconnects without end: while NATS is away, deliveries are answered 503 and the service retries them.
const connection = await connect({ servers: natsUrl, maxReconnectAttempts: -1 });
const { webhooks, redis } = createReceiver(natsInbox({ connection, stream }));

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
  void connection.drain().finally(() => redis.disconnect());
});
