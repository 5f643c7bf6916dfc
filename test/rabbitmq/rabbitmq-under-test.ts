/**
 * The RabbitMQ inbox as inboxConformanceSuite drives it: the door's `rabbitMQInbox`,
 * `rabbitMQInboxAdmin` and in-process `startRabbitMQWorker`s on the broker of this machine, each inbox
 * on queues of its own (deleted afterwards).
 */
import type { ChannelModel } from 'amqplib';
import type { InboxQueue, Webhooks } from 'service-webhooks';
import {
  HEADER,
  type RabbitMQWorker,
  rabbitMQInbox,
  rabbitMQInboxAdmin,
  startRabbitMQWorker,
} from 'service-webhooks/rabbitmq';
import type { InboxUnderTest, WorkerUnderTest, WorkerUnderTestOptions } from 'service-webhooks/testing';
import { AMQP_URL, deleteQueues, uniqueQueue } from './support.js';

/**
 * A fresh RabbitMQ inbox for one conformance test. A worker that crashes has its connection closed at
 * once (what SIGKILL does to a process's sockets), so the broker hands its deliveries out again
 * without waiting: `recoveryMs` has nothing to set here.
 */
export async function rabbitMQUnderTest(
  connection: ChannelModel,
): Promise<InboxUnderTest & { unreachableInbox(): InboxQueue }> {
  const queue = uniqueQueue('conformance');
  const inbox = rabbitMQInbox({ url: AMQP_URL, queue });
  const admin = rabbitMQInboxAdmin({ url: AMQP_URL, queue });
  // The queues exist before anything is written past the door.
  await admin.stats();
  const workers = new Set<RabbitMQWorker>();
  const unreachable = rabbitMQInbox({
    url: 'amqp://guest:guest@127.0.0.1:9',
    queue,
    confirmTimeoutMs: 1_000,
  });
  return {
    inbox,
    admin,
    async startWorker(webhooks: Webhooks, options: WorkerUnderTestOptions): Promise<WorkerUnderTest> {
      const worker = startRabbitMQWorker(webhooks, {
        url: AMQP_URL,
        queue,
        attempts: options.attempts,
        backoff: options.backoff,
        ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
        monitor: false,
      });
      workers.add(worker);
      await worker.waitUntilReady();
      return {
        close: async () => {
          workers.delete(worker);
          await worker.close();
        },
        // As SIGKILL: the connection closes with the deliveries unacknowledged; nothing is settled.
        crash: async () => {
          workers.delete(worker);
          await worker.close(true);
        },
      };
    },
    async enqueueRaw(entry: unknown, _key: string): Promise<void> {
      // Another producer's message: the body as it is, none of the inbox's headers but a trace
      // context, which the inbox carries as one (as the door's message does).
      const { traceparent, ...rest } = (typeof entry === 'object' && entry !== null ? entry : {}) as {
        traceparent?: unknown;
      };
      const body =
        (typeof traceparent === 'string' ? JSON.stringify(rest) : JSON.stringify(entry)) ?? String(entry);
      const channel = await connection.createConfirmChannel();
      try {
        channel.sendToQueue(queue, Buffer.from(body), {
          persistent: true,
          ...(typeof traceparent === 'string' ? { headers: { [HEADER.traceparent]: traceparent } } : {}),
        });
        await channel.waitForConfirms();
      } finally {
        await channel.close().catch(() => {});
      }
    },
    unreachableInbox: () => unreachable,
    async close(): Promise<void> {
      await Promise.all([...workers].map((worker) => worker.close(true)));
      workers.clear();
      await Promise.all([inbox.close(), admin.close(), unreachable.close()]);
      await deleteQueues(connection, queue);
    },
  };
}
