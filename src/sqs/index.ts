/**
 * `service-webhooks/sqs`: the durable inbox on Amazon SQS.
 *
 * - {@link sqsInbox}: the door, for `createWebhooks({ inbox })`: 200 once SQS accepted the message.
 * - {@link startSqsWorker}: a long-polling consumer for containers, with a visibility heartbeat and
 *   graceful shutdown.
 * - {@link sqsHandler}: the same consumer as a Lambda handler for an SQS event source mapping, with
 *   partial batch responses.
 * - {@link sqsInboxAdmin}: the dead-letter queue (list, show, replay, remove) and the figures.
 *
 * Attempts travel with the message (`sw-attempt`), so a crashed worker spends none of an event's
 * attempts; a failed attempt is re-sent as a delayed copy carrying the next attempt number. The
 * queue's own `RedrivePolicy` (`maxReceiveCount` ≥ 20) stays as the backstop for a message that
 * crashes every worker.
 *
 * @example
 * ```ts
 * import { SQSClient } from '@aws-sdk/client-sqs';
 * import { createWebhooks } from 'service-webhooks';
 * import { sqsInbox, startSqsWorker } from 'service-webhooks/sqs';
 *
 * const client = new SQSClient({});
 * const queueUrl = process.env.INBOX_QUEUE_URL!;
 * const webhooks = createWebhooks({ secret, store, inbox: sqsInbox({ client, queueUrl }) });
 * const worker = startSqsWorker(webhooks, { client, queueUrl });
 * process.once('SIGTERM', () => void worker.close());
 * ```
 * @packageDocumentation
 */
export { type SqsInboxAdmin, type SqsInboxAdminOptions, sqsInboxAdmin } from './admin.js';
export { SqsMessageTooLargeError } from './errors.js';
export { type SqsInbox, type SqsInboxOptions, sqsInbox } from './inbox-queue.js';
export { type SqsHandlerOptions, sqsHandler } from './lambda-handler.js';
export {
  ATTRIBUTE,
  DEFAULT_MAX_MESSAGE_BYTES,
  deduplicationId,
  type FailureRecord,
  messageBytes,
  messageOf,
  type OutgoingMessage,
  SQS_MAX_MESSAGE_BYTES,
  WORKER_HEADROOM_BYTES,
} from './message.js';
export { sqsInboxStats } from './stats.js';
export { type SqsWorker, type SqsWorkerOptions, startSqsWorker } from './worker.js';
