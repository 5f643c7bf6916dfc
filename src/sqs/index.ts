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
 * Queue settings:
 * - A dead-letter queue in the inbox queue's `RedrivePolicy` (`deadLetterTargetArn`; the workers
 *   dead-letter failed events there themselves, with their cause) and `maxReceiveCount` of 20 or
 *   more: every receive counts, a deferral's and a crashed worker's too, and a retry delay past 15
 *   minutes costs one more, so a low count would move healthy events.
 * - `VisibilityTimeout`: for `startSqsWorker`, at least its `visibilityTimeoutSeconds` (the worker
 *   receives with its own and renews it while handlers run). For `sqsHandler`, six times the
 *   function's timeout (AWS's advice), and the function's timeout above `handlerTimeoutMs`.
 * - The Lambda event source mapping with `FunctionResponseTypes: ['ReportBatchItemFailures']`.
 * - `MaximumMessageSize` above the largest entry: the receiver's `maxBodyBytes` plus about 10 KiB
 *   (the entry's fields, the attributes, and the 8 KiB kept for a dead letter's cause); 1 MiB at most,
 *   so with `maxBodyBytes` at its default of 1 MiB, lower it to about 1,000,000 bytes.
 *
 * Where it differs from the BullMQ inbox:
 * - A standard queue may hold two copies of one event (a door's write that timed out but landed, then
 *   the sender's retry; SQS's own at-least-once delivery): the store's claim runs the handlers once.
 *   A FIFO queue deduplicates the door's writes for SQS's 5 minutes.
 * - A worker that dies between writing a retry's copy and deleting the original leaves both: the
 *   original runs its attempt again when its visibility ends (handlers complete once all the same).
 * - FIFO queues refuse per-message delays: a retry's copy is received at once and hidden until its
 *   time (`ChangeMessageVisibility`), and while it waits it holds back its message group, so a group
 *   shared by many events (`messageGroupId`) keeps them in order behind a retrying one.
 * - `stats()`: `active` counts messages in flight, the running ones and those hidden until a later
 *   attempt alike; `oldestWaitingMs` is `undefined` (SQS gives the oldest message's age through
 *   CloudWatch only), so a monitor's `maxWaitMs` never fires: alarm on CloudWatch's
 *   `ApproximateAgeOfOldestMessage`.
 * - The admin's `list` is a best-effort peek (SQS has no browse API): see `sqsInboxAdmin`.
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
export {
  type DeadLetter,
  DeadLetterError,
  type DeadLetterPage,
  INBOX_DEFAULTS,
  type InboxAdmin,
  InboxBacklogError,
  type InboxBackoff,
  type InboxLogger,
  type InboxLogRecord,
  type InboxMonitorOptions,
  type InboxStats,
  type Replay,
} from 'service-webhooks/core';
export { type SqsInboxAdmin, type SqsInboxAdminOptions, sqsInboxAdmin } from './admin.js';
export { SqsMessageTooLargeError } from './errors.js';
export { type SqsInbox, type SqsInboxOptions, sqsInbox } from './inbox-queue.js';
export { type SqsHandlerOptions, sqsHandler } from './lambda-handler.js';
export {
  ATTRIBUTE,
  DEFAULT_MAX_MESSAGE_BYTES,
  deduplicationId,
  type FailureRecord,
  type MessageMeta,
  messageBytes,
  messageOf,
  type OutgoingMessage,
  SQS_MAX_MESSAGE_BYTES,
  WORKER_HEADROOM_BYTES,
} from './message.js';
export { sqsInboxStats } from './stats.js';
export { type SqsWorker, type SqsWorkerOptions, startSqsWorker } from './worker.js';
