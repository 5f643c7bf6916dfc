// The worker process: run the handlers of the events the web process queued, retrying on the
// receiver's own schedule (25 attempts over about 2.4 days by default) and dead-lettering what still
// fails (see `npx service-webhooks inbox list --url $DATABASE_URL`). Start as many as you need.
// Run: WEBHOOK_SECRET=... DATABASE_URL=postgres://... npx tsx examples/pg-boss/worker.ts
import { startPgBossWorker } from 'service-webhooks/pg-boss';
import { createReceiver, queue, schema, startBoss } from './receiver.js';

const boss = await startBoss();
const { webhooks, pool } = await createReceiver();
webhooks.on('user.created', async (event, ctx) => {
  // ctx.signal aborts when the handler runs past its budget (5 minutes by default): pass it on.
  await new Promise((resolve) => setTimeout(resolve, 10));
  console.log(
    'user.created',
    event.data.email,
    `attempt ${ctx.attempt}, received ${new Date(ctx.receivedAt).toISOString()}`,
  );
});

// Resolves once the queue holds the worker's settings and it polls for events (every 500 ms).
const worker = await startPgBossWorker(webhooks, { boss, queue, schema, concurrency: 10, logger: console });
console.log(`Worker ready on ${queue}`);
process.once('SIGTERM', () => {
  // Running handlers finish first; events not yet taken stay queued for the next worker.
  void worker
    .close()
    .then(() => boss.stop())
    .finally(() => pool.end());
});
