// The worker process: run the handlers of the events the web process queued, retrying on the
// receiver's own schedule (25 attempts over about 2.4 days by default) and dead-lettering what still
// fails (see `npx service-webhooks inbox list`). Start as many as you need, on as many machines.
// Run: WEBHOOK_SECRET=... REDIS_URL=redis://... npx tsx examples/inbox/worker.ts
import { startInboxWorker } from 'service-webhooks/bullmq';
import { createReceiver, queueName, redisUrl } from './receiver.js';

const { webhooks, redis } = createReceiver();
webhooks.on('user.created', async (event, ctx) => {
  // ctx.signal aborts when the handler runs past its budget (5 minutes by default): pass it on.
  await new Promise((resolve) => setTimeout(resolve, 10));
  console.log(
    'user.created',
    event.data.email,
    `attempt ${ctx.attempt}, received ${new Date(ctx.receivedAt).toISOString()}`,
  );
});

// BullMQ blocks on Redis for jobs: the worker makes its own connections from the URL.
const worker = startInboxWorker(webhooks, {
  connection: redisUrl,
  queueName,
  concurrency: 10,
  logger: console,
});
await worker.waitUntilReady();
console.log(`Worker ready on ${queueName}`);
process.once('SIGTERM', () => {
  // Running handlers finish first; events not yet taken stay queued for the next worker.
  void worker.close().finally(() => redis.disconnect());
});
