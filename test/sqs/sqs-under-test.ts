/**
 * The SQS inbox behind the inbox conformance suite's harness: a queue (standard or FIFO) and its
 * dead-letter queue per test on fauxqs, the door (`sqsInbox`), the admin, and in-process `startSqsWorker`s the
 * suite can close or crash. A standard queue may hold two copies of an event (`dedupesEnqueue: false`).
 */
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { InboxQueue, Webhooks } from 'service-webhooks';
import { ATTRIBUTE, type SqsWorker, sqsInbox, sqsInboxAdmin, startSqsWorker } from 'service-webhooks/sqs';
import type { InboxUnderTest, WorkerUnderTest, WorkerUnderTestOptions } from 'service-webhooks/testing';
import { createQueues, sqsClient } from './support.js';

/** A fresh SQS inbox on `client`'s emulator for one conformance test: a standard queue, or a FIFO one. */
export async function sqsUnderTest(
  client: SQSClient,
  { fifo = false }: { fifo?: boolean } = {},
): Promise<InboxUnderTest & { unreachableInbox(): InboxQueue }> {
  const queues = await createQueues(client, 'conformance', { fifo });
  const workers = new Set<SqsWorker>();
  const unreachable = sqsClient('http://127.0.0.1:9');
  return {
    inbox: sqsInbox({ client, queueUrl: queues.queueUrl }),
    admin: sqsInboxAdmin({ client, queueUrl: queues.queueUrl }),
    async startWorker(webhooks: Webhooks, options: WorkerUnderTestOptions): Promise<WorkerUnderTest> {
      const worker = startSqsWorker(webhooks, {
        client,
        queueUrl: queues.queueUrl,
        attempts: options.attempts,
        backoff: options.backoff,
        ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
        // SQS counts visibility in whole seconds: a dead worker's messages come back after it.
        visibilityTimeoutSeconds: Math.max(1, Math.ceil(options.recoveryMs / 1000)),
        waitTimeSeconds: 1,
        monitor: false,
      });
      workers.add(worker);
      await worker.waitUntilReady();
      return {
        close: async () => {
          workers.delete(worker);
          await worker.close();
        },
        // As SIGKILL: stop polling and the visibility heartbeat, settle and delete nothing.
        crash: async () => {
          workers.delete(worker);
          await worker.close(true);
        },
      };
    },
    async enqueueRaw(entry: unknown, key: string): Promise<void> {
      // Another producer's message: a body as it is, none of the inbox's attributes but a trace
      // context, which SQS carries as one (as the door's message does).
      const { traceparent, ...rest } = (typeof entry === 'object' && entry !== null ? entry : {}) as {
        traceparent?: unknown;
      };
      const body =
        (typeof traceparent === 'string' ? JSON.stringify(rest) : JSON.stringify(entry)) ?? String(entry);
      await client.send(
        new SendMessageCommand({
          QueueUrl: queues.queueUrl,
          MessageBody: body === '' ? '""' : body,
          ...(typeof traceparent === 'string'
            ? {
                MessageAttributes: {
                  [ATTRIBUTE.traceparent]: { DataType: 'String', StringValue: traceparent },
                },
              }
            : {}),
          // A FIFO queue takes a message only with its group and deduplication id: a group per key, as
          // the door makes them (fauxqs hands out one message of a group at a time, admin reads too).
          ...(fifo ? { MessageGroupId: key.slice(0, 128), MessageDeduplicationId: crypto.randomUUID() } : {}),
        }),
      );
    },
    unreachableInbox: () =>
      sqsInbox({
        client: unreachable,
        queueUrl: 'http://127.0.0.1:9/000000000000/gone',
        maxMessageBytes: 262_144,
      }),
    async close(): Promise<void> {
      await Promise.all([...workers].map((worker) => worker.close(true)));
      workers.clear();
      unreachable.destroy();
      await queues.delete();
    },
  };
}
