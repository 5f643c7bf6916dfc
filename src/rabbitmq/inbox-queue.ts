/**
 * The door's side of the RabbitMQ inbox: an `InboxQueue` that publishes each verified, deduplicated
 * event to a durable quorum queue and fulfils once the broker confirmed it.
 */
import type { InboxEntry, InboxQueue } from 'service-webhooks/core';
import { wholeOption } from '../inbox/worker-options.js';
import { Link, publishConfirmed } from './connection.js';
import { messageOf } from './message.js';
import { checkQueueName, checkUrl, declareQueues, queuesOf } from './topology.js';

/**
 * Options of {@link rabbitMQInbox}.
 *
 * @example
 * ```ts
 * rabbitMQInbox({ url: process.env.AMQP_URL!, queue: 'billing-webhooks' });
 * ```
 */
export interface RabbitMQInboxOptions {
  /** The broker: `amqp://user:password@host:5672/vhost` (or `amqps://`). The door opens its own connection. */
  readonly url: string;
  /**
   * The inbox queue (a durable quorum queue, declared by the door on its first event); dead letters go
   * to `<queue>.dead-letters`.
   * @default 'service-webhooks-inbox'
   */
  readonly queue?: string;
  /**
   * How long the door waits for the broker's confirm (and, with no connection open, for a connection)
   * before the event is refused with 503. The receiver's `storeTimeoutMs` bounds the whole write too.
   * @default 5_000
   */
  readonly confirmTimeoutMs?: number;
  /** The connection's name in `rabbitmqctl list_connections` and the management UI. @default 'service-webhooks door' */
  readonly connectionName?: string;
}

/**
 * The door's RabbitMQ inbox.
 *
 * @example
 * ```ts
 * const inbox = rabbitMQInbox({ url });
 * const webhooks = createWebhooks({ secret, store, inbox });
 * process.once('SIGTERM', () => void inbox.close());
 * ```
 */
export interface RabbitMQInbox extends InboxQueue {
  /** The inbox queue events are published to. */
  readonly queue: string;
  /** Close the door's connection; events after it are refused (503). */
  close(): Promise<void>;
}

const WHAT = 'rabbitMQInbox()';

/**
 * An inbox on RabbitMQ for `createWebhooks({ inbox })`. Each event is published as one persistent
 * message to a durable quorum queue, `mandatory`, on a confirm channel: `enqueue` fulfils only once
 * the broker confirmed it (a quorum queue confirms once a majority of its replicas wrote it to disk).
 * A `basic.return` (no such queue), a `basic.nack`, no confirm within `confirmTimeoutMs`, or a broker
 * that cannot be reached rejects with {@link RabbitMQPublishError} (or the connection's error), so the
 * sender is answered 503 `inbox_unavailable` and retries later.
 *
 * RabbitMQ does not deduplicate messages: a write whose confirm was lost but that landed, then the
 * sender's retry, leaves two copies of one event. The store's claim runs its handlers once.
 *
 * @example
 * ```ts
 * import { createWebhooks } from 'service-webhooks';
 * import { rabbitMQInbox } from 'service-webhooks/rabbitmq';
 *
 * const inbox = rabbitMQInbox({ url: process.env.AMQP_URL! });
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store, inbox });
 * ```
 */
export function rabbitMQInbox(options: RabbitMQInboxOptions): RabbitMQInbox {
  const url = checkUrl(options?.url, WHAT);
  const queue = checkQueueName(options.queue, WHAT);
  const timeoutMs = wholeOption(WHAT, 'confirmTimeoutMs', options.confirmTimeoutMs, 5_000, 1);
  const queues = queuesOf(queue);
  const link = new Link(url, {
    connectTimeoutMs: timeoutMs,
    connectionName: options.connectionName ?? 'service-webhooks door',
    setup: (channel) => declareQueues(channel, queues, false),
  });
  return {
    queue,
    async enqueue(entry: InboxEntry): Promise<void> {
      const message = messageOf(entry, { attempt: 1, enqueuedAt: Date.now() });
      await publishConfirmed(await link.open(), queue, message, timeoutMs);
    },
    close: () => link.close(),
  };
}
