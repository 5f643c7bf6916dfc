// The web process: verify, deduplicate, write each event to the inbox (a pg-boss job in PostgreSQL)
// and answer 200 once PostgreSQL has committed it. No handler runs here; worker.ts runs them.
// Run: WEBHOOK_SECRET=... DATABASE_URL=postgres://... npx tsx examples/pg-boss/web.ts
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { nodeHandler } from 'service-webhooks/node';
import { pgBossInbox } from 'service-webhooks/pg-boss';
import { createReceiver, queue, startBoss } from './receiver.js';

const boss = await startBoss();
const { webhooks, pool } = await createReceiver(pgBossInbox({ boss, queue }));

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
  void boss.stop({ graceful: false }).finally(() => pool.end());
});
