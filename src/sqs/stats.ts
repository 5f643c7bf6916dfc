/** What an SQS inbox holds, as the figures every engine reports (`InboxStats`). */
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { InboxStats } from 'service-webhooks/core';

/**
 * Read the figures of an SQS inbox from `GetQueueAttributes` (SQS's counts are approximate, and lag a
 * few seconds). `active` is SQS's in-flight count (`ApproximateNumberOfMessagesNotVisible`): the
 * events running now and also those hidden until a later attempt (a deferral, a retry copy received
 * early), which SQS cannot tell apart. `delayed` counts the retry copies in their `DelaySeconds`.
 * `oldestWaitingMs` is always `undefined`: SQS tells only the oldest message's age through CloudWatch
 * (`ApproximateAgeOfOldestMessage`), not through the queue's API, and receiving the next message to
 * read its time would take it from a worker.
 *
 * @example
 * ```ts
 * const stats = await sqsInboxStats(client, queueUrl, deadLetterQueueUrl);
 * ```
 */
export async function sqsInboxStats(
  client: SQSClient,
  queueUrl: string,
  deadLetterQueueUrl: string | undefined,
): Promise<InboxStats> {
  const [queue, dlq] = await Promise.all([
    client.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesNotVisible',
          'ApproximateNumberOfMessagesDelayed',
        ],
      }),
    ),
    deadLetterQueueUrl === undefined
      ? undefined
      : client.send(
          new GetQueueAttributesCommand({
            QueueUrl: deadLetterQueueUrl,
            AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
          }),
        ),
  ]);
  const count = (value: string | undefined) => Number(value ?? 0) || 0;
  const waiting = count(queue.Attributes?.ApproximateNumberOfMessages);
  const active = count(queue.Attributes?.ApproximateNumberOfMessagesNotVisible);
  const delayed = count(queue.Attributes?.ApproximateNumberOfMessagesDelayed);
  const deadLettered =
    count(dlq?.Attributes?.ApproximateNumberOfMessages) +
    count(dlq?.Attributes?.ApproximateNumberOfMessagesNotVisible);
  return {
    waiting,
    active,
    delayed,
    depth: waiting + active + delayed,
    deadLettered,
    oldestWaitingMs: undefined,
    // A deferred message is only hidden: nothing on it says why, so these cannot be counted.
    throttled: undefined,
    rateLimited: undefined,
  };
}
