/**
 * The BullMQ inbox as inboxConformanceSuite drives it: the door's `bullmqInbox`, `inboxAdmin` and
 * in-process `startInboxWorker`s on one real Redis, each inbox on a queue of its own.
 */
import { createServer } from 'node:net';
import { Queue } from 'bullmq';
import { bullmqInbox, inboxAdmin, startInboxWorker } from 'service-webhooks/bullmq';
import type { InboxUnderTest, WorkerUnderTest } from 'service-webhooks/testing';
import { eventJobId, jobOptions } from '../../src/bullmq/job-data.js';
import { uniqueName } from './support.js';

/** A loopback port nobody listens on: a door's Redis that is down. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * A fresh BullMQ inbox on `redisUrl`, for one conformance test. Workers get BullMQ's lock and
 * stalled-job check at the suite's `recoveryMs`, so a crashed worker's job is handed out again within
 * about twice that.
 *
 * @example
 * ```ts
 * inboxConformanceSuite({ name: 'BullMQ', describe, test, createInbox: () => bullmqUnderTest(redis.url) });
 * ```
 */
export async function bullmqUnderTest(redisUrl: string): Promise<InboxUnderTest> {
  const queueName = uniqueName('conformance');
  const inbox = bullmqInbox({ connection: redisUrl, queueName });
  const admin = inboxAdmin({ connection: redisUrl, queueName });
  const raw = new Queue(queueName, { connection: { url: redisUrl } });
  const closers: (() => Promise<void>)[] = [];
  const downPort = await closedPort();
  return {
    inbox,
    admin,
    async startWorker(webhooks, options) {
      const running = startInboxWorker(webhooks, {
        connection: redisUrl,
        queueName,
        attempts: options.attempts,
        backoff: options.backoff,
        ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
        lockDurationMs: options.recoveryMs,
        stalledIntervalMs: options.recoveryMs,
        monitor: false,
        keepCompleted: 0,
      });
      let closed = false;
      closers.push(async () => {
        if (!closed) await running.close();
      });
      await running.waitUntilReady();
      const worker: WorkerUnderTest = {
        async close() {
          closed = true;
          await running.close();
        },
        async crash() {
          // Force: nothing waits for the running handlers, and BullMQ's lock renewal stops with it,
          // so the job is left active with a lock that runs out, as after SIGKILL.
          closed = true;
          await running.close(true);
        },
      };
      return worker;
    },
    async enqueueRaw(entry, key) {
      await raw.add('event', entry as never, jobOptions(eventJobId(key)));
    },
    unreachableInbox() {
      const down = bullmqInbox({
        connection: `redis://127.0.0.1:${downPort}`,
        queueName,
        readyTimeoutMs: 200,
      });
      closers.push(() => down.close());
      return down;
    },
    async close() {
      for (const close of closers.splice(0).reverse()) await close();
      await raw.obliterate({ force: true });
      await raw.close();
      await admin.close();
      await inbox.close();
    },
  };
}
