/**
 * The inbox's JetStream objects and how they are made: the inbox stream (file storage, work-queue
 * retention: a message leaves once acknowledged), the dead-letter stream (file storage, kept until
 * replayed or removed), and the durable pull consumer the workers share. Made by whoever comes first
 * (a door, a worker, an admin), each idempotently.
 */
import {
  AckPolicy,
  DeliverPolicy,
  type JetStreamManager,
  RetentionPolicy,
  StorageType,
} from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { ConfigurationError } from 'service-webhooks/core';
import type { NatsInboxNames } from './message.js';

/** JetStream's default duplicate window, which the inbox keeps unless told otherwise: two minutes. */
export const DEFAULT_DUPLICATE_WINDOW_MS = 120_000;

const NANOS_PER_MS = 1_000_000;

/** The API error code JetStream answers for a stream that does not exist. */
const STREAM_NOT_FOUND = 10059;
/** …for a consumer that does not exist. */
const CONSUMER_NOT_FOUND = 10014;

/** Whether `error` is JetStream saying that a stream or consumer is not there. */
export function isNotFound(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return code === STREAM_NOT_FOUND || code === CONSUMER_NOT_FOUND;
}

/** A NATS connection, checked by shape, so that a mistake is a ConfigurationError, not a TypeError later. */
export function checkConnection(connection: unknown, what: string): NatsConnection {
  const candidate = connection as Partial<NatsConnection> | undefined;
  if (typeof candidate?.publish !== 'function' || typeof candidate.request !== 'function') {
    throw new ConfigurationError(
      `${what} needs \`connection\`: a NATS connection (\`await connect({ servers })\` from @nats-io/transport-node).`,
    );
  }
  return connection as NatsConnection;
}

/**
 * Make the inbox stream and the dead-letter stream if they are missing. An existing stream is left as
 * it is (its duplicate window, limits and replicas are the operator's once made).
 */
export async function ensureStreams(
  jsm: JetStreamManager,
  names: NatsInboxNames,
  duplicateWindowMs = DEFAULT_DUPLICATE_WINDOW_MS,
): Promise<void> {
  const duplicate_window = duplicateWindowMs * NANOS_PER_MS;
  await ensureStream(jsm, names.stream, {
    subjects: [names.subject],
    storage: StorageType.File,
    retention: RetentionPolicy.Workqueue,
    duplicate_window,
  });
  await ensureStream(jsm, names.deadLetterStream, {
    subjects: [names.deadLetterSubject],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    duplicate_window,
  });
}

async function ensureStream(
  jsm: JetStreamManager,
  name: string,
  config: Parameters<JetStreamManager['streams']['add']>[0] extends infer C ? Omit<C, 'name'> : never,
): Promise<void> {
  try {
    await jsm.streams.info(name);
    return;
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  try {
    await jsm.streams.add({ ...config, name });
  } catch (error) {
    // Made meanwhile by another door or worker: what was wanted.
    await jsm.streams.info(name).catch(() => {
      throw error;
    });
  }
}

/**
 * The workers' settings on the durable consumer, written by each worker as it starts (the last one
 * started wins, as a pg-boss queue's settings do).
 */
export interface ConsumerSettings {
  /** The lease: a delivery not acknowledged (nor marked in progress) within it is handed out again. */
  readonly ackWaitMs: number;
  /** Deliveries of one message before JetStream stops handing it out (its advisory then fires). */
  readonly maxDeliver: number;
}

/** Make or update the durable pull consumer of the inbox stream with the workers' settings. */
export async function ensureConsumer(
  jsm: JetStreamManager,
  names: NatsInboxNames,
  settings: ConsumerSettings,
): Promise<void> {
  const wanted = {
    ack_wait: settings.ackWaitMs * NANOS_PER_MS,
    max_deliver: settings.maxDeliver,
    // Messages waiting for a retry or a deferral are pending acknowledgement: no limit, or a backlog
    // of retries would stop new events from being handed out.
    max_ack_pending: -1,
  };
  try {
    await jsm.consumers.info(names.stream, names.consumer);
    await jsm.consumers.update(names.stream, names.consumer, wanted);
    return;
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  await jsm.consumers.add(names.stream, {
    ...wanted,
    durable_name: names.consumer,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: names.subject,
  });
}
