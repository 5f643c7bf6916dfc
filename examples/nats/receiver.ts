// What the web process and the worker process share: NATS JetStream holds the queue, Redis the claims
// (RedisStore), and the receiver is created the same way in both (same secret, same store), so that
// the worker's claims and the door's are in one dedup scope.
import { Redis } from 'ioredis';
import { createWebhooks, type InboxQueue, type Webhooks } from 'service-webhooks';
import { RedisStore } from 'service-webhooks/redis';

export const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
export const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const stream = process.env.INBOX_STREAM ?? 'service-webhooks-inbox';

export function createReceiver(inbox?: InboxQueue): { webhooks: Webhooks; redis: Redis } {
  // The store's client fails fast while Redis is unreachable: a delivery is then answered 503 at once
  // and the service retries it, rather than waiting on a command queued for a connection to come.
  const redis = new Redis(redisUrl, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 1_000,
  });
  redis.on('error', (error) => console.error('redis:', error.message));
  const webhooks = createWebhooks({
    secret: process.env.WEBHOOK_SECRET!,
    store: new RedisStore({ client: redis }),
    ...(inbox && { inbox }),
  });
  webhooks.onError((error, event) => console.error(`${error.code}: ${error.message}`, event?.id ?? ''));
  return { webhooks, redis };
}
