// The worker process: run the handlers of the events the web process queued, retrying on the
// receiver's own schedule (25 attempts over about 2.4 days by default) and dead-lettering what still
// fails (see `npx service-webhooks inbox list --url $AMQP_URL`). Start as many as you need.
// Run: WEBHOOK_SECRET=... AMQP_URL=amqp://... DATABASE_URL=postgres://... npx tsx examples/rabbitmq/worker.ts
import { startRabbitMQWorker } from 'service-webhooks/rabbitmq';
import { amqpUrl, createReceiver, queue } from './receiver.js';

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

// Consumes once the queues are declared; a lost connection is opened again by itself.
const worker = startRabbitMQWorker(webhooks, { url: amqpUrl, queue, concurrency: 10, logger: console });
await worker.waitUntilReady();
console.log(`Worker ready on ${queue}`);
process.once('SIGTERM', () => {
  // Running handlers finish first; events not yet started go back to the queue for the next worker.
  void worker.close().finally(() => pool.end());
});
