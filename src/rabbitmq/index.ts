/**
 * `service-webhooks/rabbitmq`: the durable inbox on RabbitMQ, through amqplib (an optional peer:
 * `npm install amqplib`).
 *
 * - {@link rabbitMQInbox}: the door, for `createWebhooks({ inbox })`: 200 once the broker confirmed
 *   the event's message in a durable quorum queue.
 * - {@link startRabbitMQWorker}: a consumer that runs the handlers, retries on the receiver's schedule,
 *   dead-letters with the cause, and opens a lost connection again.
 * - {@link rabbitMQInboxAdmin}: the dead-letter queue (list, show, replay, remove) and the figures.
 *
 * How it maps onto RabbitMQ (the docs' "Inbox on RabbitMQ" page says more):
 * - `<queue>` is a durable quorum queue; each event one persistent message, published `mandatory` on a
 *   confirm channel. RabbitMQ does not deduplicate: two writes of one event leave two messages, and
 *   the store's claim runs the handlers once.
 * - An unacknowledged delivery is a worker's lease: a worker that dies (or loses its connection) has
 *   its deliveries handed out again at once, counted by the quorum queue (`x-delivery-count`), never
 *   as an attempt. The attempt count travels in the message's headers, sealed by the receiver.
 * - Delays without a plugin: holding queues `<queue>.delay.<ms>` (100 ms × 4ⁿ), each with one message
 *   TTL and dead-lettering back to the inbox queue; a delay is a few trips through them.
 * - Dead letters are the messages of `<queue>.dead-letters`, with the cause in their headers.
 * - The broker's `consumer_timeout` (30 minutes by default) must stay above the handlers' budget.
 *
 * @example
 * ```ts
 * import { createWebhooks } from 'service-webhooks';
 * import { rabbitMQInbox, startRabbitMQWorker } from 'service-webhooks/rabbitmq';
 *
 * // web.ts: the door
 * const door = createWebhooks({ secret, store, inbox: rabbitMQInbox({ url: process.env.AMQP_URL! }) });
 * // worker.ts: the handlers
 * const webhooks = createWebhooks({ secret, store });
 * webhooks.on('user.created', async (event, ctx) => sendWelcomeMail(event.data.email, { signal: ctx.signal }));
 * const worker = startRabbitMQWorker(webhooks, { url: process.env.AMQP_URL! });
 * process.once('SIGTERM', () => void worker.close());
 * ```
 * @packageDocumentation
 */
export type { DeadLetter, DeadLetterPage, InboxAdmin, InboxStats, Replay } from 'service-webhooks/core';
export {
  DeadLetterError,
  INBOX_DEFAULTS,
  InboxBacklogError,
  type InboxBackoff,
  type InboxLogger,
  type InboxLogRecord,
  type InboxMonitorOptions,
} from 'service-webhooks/core';
export { type RabbitMQInboxAdmin, type RabbitMQInboxAdminOptions, rabbitMQInboxAdmin } from './admin.js';
export { RabbitMQPublishError } from './errors.js';
export { type RabbitMQInbox, type RabbitMQInboxOptions, rabbitMQInbox } from './inbox-queue.js';
export {
  type FailureRecord,
  HEADER,
  type MessageMeta,
  messageOf,
  type OutgoingMessage,
} from './message.js';
export { type DeclaringChannel, rabbitMQInboxStats } from './stats.js';
export {
  DEFAULT_RABBITMQ_QUEUE,
  DELAY_STEPS_MS,
  DELIVERY_LIMIT,
  type InboxQueues,
  queuesOf,
} from './topology.js';
export { type RabbitMQWorker, type RabbitMQWorkerOptions, startRabbitMQWorker } from './worker.js';
