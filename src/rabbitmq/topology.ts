/**
 * The queues of one RabbitMQ inbox and their arguments, in one place: the door, the worker and the
 * admin declare them alike (RabbitMQ refuses a second declaration whose arguments differ).
 *
 * - `<queue>`: the inbox, a durable quorum queue. Its own dead-lettering (a message handed out more
 *   than {@link DELIVERY_LIMIT} times without an acknowledgement: every worker that took it died) goes
 *   to the dead-letter queue, as the backstop of the worker's own `maxCrashes`.
 * - `<queue>.dead-letters`: dead letters, which no worker consumes.
 * - `<queue>.delay.<ms>`: holding queues, one per step of {@link DELAY_STEPS_MS}. Every message in one
 *   has the same time to live, so they expire in the order they came (RabbitMQ expires messages only at
 *   a queue's head: one queue with per-message TTLs would hold a short delay behind a long one); an
 *   expired message is dead-lettered back to the inbox, at least once (the quorum queue keeps it until
 *   the inbox confirmed it).
 */
import { ConfigurationError } from 'service-webhooks/core';

/**
 * The queue the inbox uses unless `queue` says otherwise.
 *
 * @example
 * ```ts
 * rabbitMQInbox({ url, queue: DEFAULT_RABBITMQ_QUEUE });
 * ```
 */
export const DEFAULT_RABBITMQ_QUEUE = 'service-webhooks-inbox';

/**
 * The holding queues' times to live: 100 ms times powers of four, up to about 29 hours. A delay is
 * made of the longest steps that fit, each a trip through the inbox queue (a worker that receives a
 * copy early holds it back again for what remains, spending nothing), and the last 100 ms are waited
 * out by the worker: at most a dozen queues whatever the schedule, and about three trips per step.
 *
 * @example
 * ```ts
 * DELAY_STEPS_MS.findLast((step) => step <= 30_000); // 25_600
 * ```
 */
export const DELAY_STEPS_MS: readonly number[] = Object.freeze(
  Array.from({ length: 11 }, (_, n) => 100 * 4 ** n),
);

/**
 * How often the inbox queue hands one message out without an acknowledgement before RabbitMQ moves
 * it to the dead-letter queue itself (`x-delivery-limit`): far above the worker's `maxCrashes`, which
 * dead-letters such an event first, with its cause.
 */
export const DELIVERY_LIMIT = 100;

/**
 * The names of one inbox's queues.
 *
 * @example
 * ```ts
 * const { deadLetters, delay } = queuesOf('billing-webhooks'); // 'billing-webhooks.dead-letters'
 * ```
 */
export interface InboxQueues {
  readonly queue: string;
  readonly deadLetters: string;
  /** The holding queue of a step of {@link DELAY_STEPS_MS}. */
  delay(stepMs: number): string;
}

/**
 * The queues of the inbox `queue`.
 *
 * @example
 * ```ts
 * queuesOf('service-webhooks-inbox').delay(400); // 'service-webhooks-inbox.delay.400'
 * ```
 */
export function queuesOf(queue: string): InboxQueues {
  return {
    queue,
    deadLetters: `${queue}.dead-letters`,
    delay: (stepMs) => `${queue}.delay.${stepMs}`,
  };
}

/**
 * Check a queue name (AMQP allows 255 bytes; the inbox adds up to 20 for its other queues).
 *
 * @example
 * ```ts
 * const queue = checkQueueName(options.queue, 'rabbitMQInbox()');
 * ```
 */
export function checkQueueName(queue: unknown, what: string): string {
  if (queue === undefined) return DEFAULT_RABBITMQ_QUEUE;
  if (typeof queue !== 'string' || !/^[A-Za-z0-9_\-.:/]{1,200}$/.test(queue) || queue.startsWith('amq.')) {
    throw new ConfigurationError(
      `${what} \`queue\` must be a queue name of letters, digits and _ - . : / (at most 200, not starting with amq.); got ${JSON.stringify(queue)}.`,
    );
  }
  return queue;
}

/**
 * Check an AMQP URL (`amqp://` or `amqps://`).
 *
 * @example
 * ```ts
 * const url = checkUrl(options.url, 'rabbitMQInbox()');
 * ```
 */
export function checkUrl(url: unknown, what: string): string {
  if (typeof url !== 'string' || !/^amqps?:\/\//i.test(url)) {
    throw new ConfigurationError(
      `${what} needs \`url\`: the broker's amqp:// or amqps:// URL; got ${typeof url === 'string' ? JSON.stringify(url.replace(/\/\/[^@/]*@/, '//…@')) : typeof url}.`,
    );
  }
  return url;
}

/**
 * The steps that make up `delayMs`, longest first, and what is left under the shortest step: the
 * first step is the holding queue a copy goes to now.
 *
 * @example
 * ```ts
 * firstStep(2_150); // 1_600 (then 400, then 150 ms waited out by the worker)
 * ```
 */
export function firstStep(delayMs: number): number | undefined {
  let chosen: number | undefined;
  for (const step of DELAY_STEPS_MS) if (step <= delayMs) chosen = step;
  return chosen;
}

/** What a channel offers for declaring queues (amqplib's `assertQueue`). */
interface Declaring {
  assertQueue(
    queue: string,
    options: { durable: boolean; arguments: Record<string, unknown> },
  ): Promise<{ messageCount: number }>;
}

/**
 * Declare the inbox queue and its dead-letter queue (the door's part); with `delays`, every holding
 * queue too (the worker's and the admin's). Answers the ready messages of each, as declared.
 *
 * @example
 * ```ts
 * await declareQueues(channel, queuesOf(queue), true);
 * ```
 */
export async function declareQueues(
  channel: Declaring,
  queues: InboxQueues,
  delays: boolean,
): Promise<{ waiting: number; deadLettered: number; delayed: number }> {
  const deadLetters = await channel.assertQueue(queues.deadLetters, {
    durable: true,
    arguments: { 'x-queue-type': 'quorum' },
  });
  const main = await channel.assertQueue(queues.queue, {
    durable: true,
    arguments: {
      'x-queue-type': 'quorum',
      'x-delivery-limit': DELIVERY_LIMIT,
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': queues.deadLetters,
      'x-dead-letter-strategy': 'at-least-once',
      'x-overflow': 'reject-publish',
    },
  });
  let delayed = 0;
  if (delays) {
    const held = await Promise.all(
      DELAY_STEPS_MS.map((step) =>
        channel.assertQueue(queues.delay(step), {
          durable: true,
          arguments: {
            'x-queue-type': 'quorum',
            'x-message-ttl': step,
            'x-dead-letter-exchange': '',
            'x-dead-letter-routing-key': queues.queue,
            'x-dead-letter-strategy': 'at-least-once',
            'x-overflow': 'reject-publish',
          },
        }),
      ),
    );
    for (const queue of held) delayed += queue.messageCount;
  }
  return { waiting: main.messageCount, deadLettered: deadLetters.messageCount, delayed };
}
