// The worker process: run the handlers of the events the web process queued, retrying on the
// receiver's own schedule (25 attempts over about 2.4 days by default) and dead-lettering what still
// fails (see `npx service-webhooks inbox list --url $NATS_URL`). Start as many as you need.
// Run: WEBHOOK_SECRET=... NATS_URL=nats://... REDIS_URL=redis://... npx tsx examples/nats/worker.ts
import { startNatsWorker } from 'service-webhooks/nats';
import { createReceiver, natsUrl, stream } from './receiver.js';

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

// A URL: the worker makes its own connection (reconnecting without end) and closes it on close().
// Resolves once the streams and the workers' consumer exist and it pulls.
const worker = await startNatsWorker(webhooks, {
  connection: natsUrl,
  stream,
  concurrency: 10,
  logger: console,
});
console.log(`Worker ready on ${stream}`);
process.once('SIGTERM', () => {
  // Running handlers finish first; events not yet taken stay in the stream for the next worker.
  void worker.close().finally(() => redis.disconnect());
});
