// What the web process and the worker process share: RabbitMQ holds the queue, PostgreSQL the claims
// (PostgresStore), and the receiver is created the same way in both (same secret, same store), so that
// the worker's claims and the door's are in one dedup scope.
import pg from 'pg';
import { createWebhooks, type InboxQueue, type Webhooks } from 'service-webhooks';
import { PostgresStore } from 'service-webhooks/postgres';

export const amqpUrl = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
export const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const queue = process.env.INBOX_QUEUE ?? 'service-webhooks-inbox';

export async function createReceiver(inbox?: InboxQueue): Promise<{ webhooks: Webhooks; pool: pg.Pool }> {
  // Fail fast while PostgreSQL is unreachable or stuck: a delivery is then answered 503 at once and
  // the service retries it.
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: 4,
    connectionTimeoutMillis: 1_000,
    statement_timeout: 1_000,
  });
  const store = new PostgresStore({ pool, table: process.env.WEBHOOK_TABLE ?? 'webhook_events' });
  await store.createTable(); // or put postgresStoreMigration() in your migrations
  const webhooks = createWebhooks({
    secret: process.env.WEBHOOK_SECRET!,
    store,
    ...(inbox && { inbox }),
  });
  webhooks.onError((error, event) => console.error(`${error.code}: ${error.message}`, event?.id ?? ''));
  return { webhooks, pool };
}
