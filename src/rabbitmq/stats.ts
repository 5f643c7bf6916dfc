/** What a RabbitMQ inbox holds, as the figures every engine reports (`InboxStats`). */
import type { InboxStats } from 'service-webhooks/core';
import { declareQueues, queuesOf } from './topology.js';

/**
 * A channel as {@link rabbitMQInboxStats} uses it: amqplib's `Channel` or `ConfirmChannel`.
 *
 * @example
 * ```ts
 * const channel: DeclaringChannel = await connection.createChannel();
 * ```
 */
export interface DeclaringChannel {
  assertQueue(
    queue: string,
    options: { durable: boolean; arguments: Record<string, unknown> },
  ): Promise<{ messageCount: number }>;
}

/**
 * Read the figures of a RabbitMQ inbox by declaring its queues (a declaration answers the queue's
 * ready messages; it creates the queues that do not exist yet, with the inbox's arguments). AMQP tells
 * only the messages ready to be handed out: `waiting` is the inbox queue's, `delayed` the holding
 * queues', `deadLettered` the dead-letter queue's. The messages workers hold now (running, or in
 * their prefetch) are not among them, so `active` is 0 here (a worker's own `stats()` counts its
 * own); the management plugin's `messages_unacknowledged` has them all. `oldestWaitingMs` is
 * `undefined`: reading the oldest message would take it from a worker.
 *
 * @example
 * ```ts
 * const channel = await connection.createChannel();
 * const { waiting, delayed, deadLettered } = await rabbitMQInboxStats(channel, 'service-webhooks-inbox');
 * ```
 */
export async function rabbitMQInboxStats(channel: DeclaringChannel, queue: string): Promise<InboxStats> {
  const counts = await declareQueues(channel, queuesOf(queue), true);
  return {
    waiting: counts.waiting,
    active: 0,
    delayed: counts.delayed,
    depth: counts.waiting + counts.delayed,
    deadLettered: counts.deadLettered,
    oldestWaitingMs: undefined,
  };
}
