/**
 * The NATS inbox as inboxConformanceSuite drives it: the door's `natsInbox`, `natsInboxAdmin` and
 * in-process `startNatsWorker`s (each on a connection of its own, as a worker process would have) on
 * the machine's NATS, each inbox on a stream of its own, deleted afterwards.
 */
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  doorMessageId,
  type NatsInbox,
  natsInbox,
  natsInboxAdmin,
  natsInboxNames,
  startNatsWorker,
} from 'service-webhooks/nats';
import type { InboxUnderTest, WorkerUnderTest } from 'service-webhooks/testing';
import { deleteInbox, NATS_URL, uniqueStream } from './support.js';

/**
 * A fresh NATS inbox for one conformance test. A worker's `AckWait` is the suite's `recoveryMs`, so a
 * crashed worker's event is handed out again within it (the in-progress acknowledgements of a live
 * one come every third of it). `closed` is a connection already closed: the door on it must refuse
 * events.
 *
 * @example
 * ```ts
 * inboxConformanceSuite({ name: 'NATS JetStream', describe, test, createInbox: () => natsUnderTest(connection, closed) });
 * ```
 */
export async function natsUnderTest(
  connection: NatsConnection,
  closed: NatsConnection,
): Promise<InboxUnderTest> {
  const stream = uniqueStream('conformance');
  const names = natsInboxNames(stream);
  const inbox = natsInbox({ connection, stream });
  const admin = natsInboxAdmin({ connection, stream });
  const closers: (() => Promise<void>)[] = [];
  const underTest = {
    inbox,
    admin,
    async startWorker(webhooks, options) {
      const running = await startNatsWorker(webhooks, {
        connection: NATS_URL,
        stream,
        attempts: options.attempts,
        backoff: options.backoff,
        ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
        ackWaitMs: options.recoveryMs,
        pollMs: 1_000,
        monitor: false,
      });
      let done = false;
      closers.push(async () => {
        if (!done) await running.close();
      });
      const worker: WorkerUnderTest = {
        async close() {
          done = true;
          await running.close();
        },
        async crash() {
          // Forced: nothing waits for the running handlers, nothing is acknowledged or renewed for
          // them, and the worker's connection closes: their messages come back after AckWait.
          done = true;
          await running.close(true);
        },
      };
      return worker;
    },
    async enqueueRaw(entry: unknown, key: string) {
      // As another producer with write access to the subject might: any JSON, under the door's id.
      // (The suite starts a worker first, which made the streams.)
      await jetstream(connection).publish(names.subject, JSON.stringify(entry ?? null), {
        msgID: doorMessageId(key),
      });
    },
    unreachableInbox(): NatsInbox {
      return natsInbox({ connection: closed, stream });
    },
    async close() {
      for (const close of closers.splice(0).reverse()) await close();
      await admin.close();
      await deleteInbox(connection, stream);
    },
  } satisfies InboxUnderTest & { unreachableInbox(): NatsInbox };
  return underTest;
}
