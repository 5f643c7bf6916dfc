// A node:http receiver whose idempotency store is PostgreSQL (service-webhooks/postgres), so every
// process behind the load balancer handles each event once.
// Run: WEBHOOK_SECRET=... DATABASE_URL=postgres://... npx tsx examples/postgres-store/server.ts
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { createWebhooks } from 'service-webhooks';
import { nodeHandler } from 'service-webhooks/node';
import { PostgresStore } from 'service-webhooks/postgres';

// Fail fast while PostgreSQL is unreachable or stuck: deliveries are then answered 503 and retried.
const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL,
  connectionTimeoutMillis: 1_000,
  statement_timeout: 1_000,
});
// No pool.on('error') needed: the store listens, so an idle connection that drops (a restart, a
// failover) reaches webhooks.onError (stderr without one) instead of ending the process.
const store = new PostgresStore({ pool, table: process.env.WEBHOOK_TABLE ?? 'webhook_events' });
await store.createTable(); // or put postgresStoreMigration() in your migrations
// Ended rows are claimable as they are; purging only keeps the table small.
setInterval(() => void store.purgeExpired().catch(console.error), 60 * 60 * 1000).unref();

const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store });
webhooks.on('user.created', (event) => {
  console.log('user.created', event.data.email);
});

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
  void pool.end();
});
