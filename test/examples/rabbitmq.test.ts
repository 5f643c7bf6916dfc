/**
 * examples/rabbitmq on the built package, against the broker of this machine (AMQP_URL, otherwise
 * guest@127.0.0.1:5672) and the test PostgreSQL for the store: the web process acknowledges a delivery
 * while no worker runs (the event waits in RabbitMQ), the worker process then runs its handler once,
 * and a retry of the delivery is a duplicate. The queues and the store's table are the test's own,
 * deleted afterwards.
 */
import { connect } from 'amqplib';
import pg from 'pg';
import { DELAY_STEPS_MS, queuesOf } from 'service-webhooks/rabbitmq';
import { afterAll, test } from 'vitest';
import { expectQueuedThenHandledOnce } from './run-example.js';

const amqpUrl = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const connectionString = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const suffix = crypto.randomUUID().replaceAll('-', '').slice(0, 12);
const queue = `example-${suffix}`;
const table = `webhook_events_example_${suffix}`;
// startExample hands the examples this process's environment (each test file runs in its own worker).
process.env.AMQP_URL = amqpUrl;
process.env.DATABASE_URL = connectionString;
process.env.INBOX_QUEUE = queue;
process.env.WEBHOOK_TABLE = table;

afterAll(async () => {
  const connection = await connect(amqpUrl);
  const channel = await connection.createChannel();
  const queues = queuesOf(queue);
  for (const name of [queues.queue, queues.deadLetters, ...DELAY_STEPS_MS.map(queues.delay)])
    await channel.deleteQueue(name);
  await connection.close();
  const client = new pg.Client({ connectionString });
  await client.connect();
  await client.query(`DROP TABLE IF EXISTS "${table}"`);
  await client.end();
});

test('examples/rabbitmq: the web process queues while no worker runs; the worker handles it once (built package)', async () => {
  // The broker pushes to the consumer at once: half a second shows no second run.
  await expectQueuedThenHandledOnce('examples/rabbitmq/web.ts', 'examples/rabbitmq/worker.ts', 500);
}, 60_000);
