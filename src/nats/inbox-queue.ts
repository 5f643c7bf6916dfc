/**
 * The door's side of the inbox on NATS JetStream: an `InboxQueue` that publishes each verified,
 * deduplicated event to the inbox stream and fulfils once JetStream acknowledged storing it.
 */
import { type JetStreamClient, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { InboxEntry, InboxQueue } from 'service-webhooks/core';
import { wholeOption } from '../inbox/worker-options.js';
import { doorMessageId, type NatsInboxNames, natsInboxNames, payloadOf } from './message.js';
import { checkConnection, DEFAULT_DUPLICATE_WINDOW_MS, ensureStreams } from './streams.js';

/**
 * Options of {@link natsInbox}.
 *
 * @example
 * ```ts
 * natsInbox({ connection: await connect({ servers: 'nats://127.0.0.1:4222' }), stream: 'billing-webhooks' });
 * ```
 */
export interface NatsInboxOptions {
  /** A NATS connection (`connect()` of `@nats-io/transport-node`); the inbox never closes it. */
  readonly connection: NatsConnection;
  /**
   * The inbox stream's name; the subject, the workers' consumer and the dead-letter stream are named
   * after it. Made on the first event if it does not exist (file storage, work-queue retention).
   * @default 'service-webhooks-inbox'
   */
  readonly stream?: string;
  /** How long to wait for JetStream's publish acknowledgement. @default 5_000 */
  readonly publishTimeoutMs?: number;
  /**
   * The duplicate window of streams the inbox makes: a second write of one event within it adds
   * nothing. Streams that exist keep theirs.
   * @default 120_000 (JetStream's default)
   */
  readonly duplicateWindowMs?: number;
}

/**
 * The door's inbox on NATS JetStream: pass it to `createWebhooks({ inbox })`.
 *
 * @example
 * ```ts
 * const inbox = natsInbox({ connection });
 * const webhooks = createWebhooks({ secret, store, inbox });
 * ```
 */
export interface NatsInbox extends InboxQueue {
  readonly connection: NatsConnection;
  /** The inbox's stream, subject, consumer and dead-letter stream. */
  readonly names: NatsInboxNames;
}

const WHAT = 'natsInbox()';

/**
 * An inbox on NATS JetStream for `createWebhooks({ inbox })`. Each event is published to the inbox
 * stream with the digest of its dedup key as `Nats-Msg-Id`, so a second write of one event within
 * the stream's duplicate window adds nothing (the PubAck says `duplicate`); `enqueue` fulfils once
 * JetStream acknowledged storing it (file storage), and rejects when no acknowledgement comes in
 * time, so the sender is answered 503 `inbox_unavailable` and retries.
 *
 * @example
 * ```ts
 * import { connect } from '@nats-io/transport-node';
 * import { createWebhooks } from 'service-webhooks';
 * import { natsInbox } from 'service-webhooks/nats';
 *
 * const connection = await connect({ servers: process.env.NATS_URL! });
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store, inbox: natsInbox({ connection }) });
 * ```
 */
export function natsInbox(options: NatsInboxOptions): NatsInbox {
  const connection = checkConnection(options?.connection, WHAT);
  const names = natsInboxNames(options.stream, WHAT);
  const timeout = wholeOption(WHAT, 'publishTimeoutMs', options.publishTimeoutMs, 5_000);
  const duplicateWindowMs = wholeOption(
    WHAT,
    'duplicateWindowMs',
    options.duplicateWindowMs,
    DEFAULT_DUPLICATE_WINDOW_MS,
    1_000,
  );
  /** Made once; forgotten when it failed (NATS down), so the next event tries again. */
  let ready: Promise<JetStreamClient> | undefined;
  const client = (): Promise<JetStreamClient> => {
    ready ??= (async () => {
      await ensureStreams(await jetstreamManager(connection, { timeout }), names, duplicateWindowMs);
      return jetstream(connection, { timeout });
    })().catch((error: unknown) => {
      ready = undefined;
      throw error;
    });
    return ready;
  };
  return {
    connection,
    names,
    async enqueue(entry: InboxEntry, key: string): Promise<void> {
      const js = await client();
      // A duplicate PubAck is JetStream saying this event is stored already: what was asked.
      await js.publish(names.subject, payloadOf(entry), { msgID: doorMessageId(key), timeout });
    },
  };
}
