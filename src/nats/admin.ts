/**
 * The dead letters of a NATS JetStream inbox (the dead-letter stream, which no worker consumes): list,
 * inspect, replay, remove; and the inbox's figures. A dead letter's id is its sequence in that stream.
 */
import {
  type JetStreamClient,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
  type StoredMsg,
} from '@nats-io/jetstream';
import type { DeadLetter, InboxAdmin, Replay } from 'service-webhooks/core';
import { DeadLetterError } from 'service-webhooks/core';
import { checkPage, replayEach, replayIdOf } from '../inbox/dead-letters.js';
import { type NatsInboxConnection, type OpenedConnection, openConnection } from './connection.js';
import {
  entryOf,
  headersOf,
  metaOf,
  type NatsInboxNames,
  natsInboxNames,
  replayMessageId,
} from './message.js';
import { natsInboxStats } from './stats.js';
import { ensureStreams, isNotFound } from './streams.js';

/**
 * Options of {@link natsInboxAdmin}: where the inbox is.
 *
 * @example
 * ```ts
 * natsInboxAdmin({ connection: 'nats://127.0.0.1:4222', stream: 'billing-webhooks' });
 * ```
 */
export interface NatsInboxAdminOptions {
  /** A NATS connection (never closed by the admin), or a `nats://` URL (the admin's own, closed by `close()`). */
  readonly connection: NatsInboxConnection;
  /** @default 'service-webhooks-inbox' */
  readonly stream?: string;
}

/**
 * The tools of a NATS inbox (see `InboxAdmin`).
 *
 * @example
 * ```ts
 * const admin: NatsInboxAdmin = natsInboxAdmin({ connection });
 * console.log(admin.names.deadLetterStream);
 * ```
 */
export interface NatsInboxAdmin extends InboxAdmin {
  readonly engine: 'nats';
  /** The inbox's stream, subject, consumer and dead-letter stream. */
  readonly names: NatsInboxNames;
}

const WHAT = 'natsInboxAdmin()';

/** The API error code JetStream answers when deleting a message that is not there. */
const NO_MESSAGE_FOUND = 10057;

/**
 * Open the figures and dead-letter list of a NATS inbox. Dead letters are the messages of
 * `<stream>-dead-letters`, each with its cause in headers (`Sw-Failure`): those the workers wrote (the
 * last failure, a poison or unauthenticated entry) and those moved there when JetStream stopped
 * handing a message out (`MaxDeliver`). The listing reads the whole dead-letter stream, newest first:
 * meant for the hundreds a team looks through, not millions.
 *
 * @example
 * ```ts
 * import { natsInboxAdmin } from 'service-webhooks/nats';
 *
 * const admin = natsInboxAdmin({ connection: process.env.NATS_URL! });
 * console.log(await admin.stats());
 * await admin.replayAll();
 * await admin.close();
 * ```
 */
export function natsInboxAdmin(options: NatsInboxAdminOptions): NatsInboxAdmin {
  const names = natsInboxNames(options?.stream, WHAT);
  let opened: Promise<OpenedConnection> | undefined;
  let clients: Promise<{ jsm: JetStreamManager; js: JetStreamClient }> | undefined;
  const open = (): Promise<{ jsm: JetStreamManager; js: JetStreamClient }> => {
    opened ??= openConnection(options.connection, WHAT, 'admin');
    clients ??= opened
      .then(async ({ connection }) => ({
        jsm: await jetstreamManager(connection),
        js: jetstream(connection),
      }))
      .catch((error: unknown) => {
        clients = undefined;
        opened = undefined;
        throw error;
      });
    return clients;
  };
  if (typeof options?.connection !== 'string') void open().catch(() => {});

  const read = async (jobId: string): Promise<StoredMsg | undefined> => {
    if (!/^[1-9][0-9]{0,15}$/.test(jobId)) return undefined;
    const { jsm } = await open();
    const stored = await jsm.streams
      .getMessage(names.deadLetterStream, { seq: Number(jobId) })
      .catch((error: unknown) => {
        if (isNotFound(error)) return null;
        throw error;
      });
    return stored && stored.subject === names.deadLetterSubject ? stored : undefined;
  };

  const all = async (): Promise<StoredMsg[]> => {
    const { jsm } = await open();
    const letters: StoredMsg[] = [];
    for (let seq = 1; ; ) {
      const next = await jsm.streams
        .getMessage(names.deadLetterStream, { seq, next_by_subj: names.deadLetterSubject } as never)
        .catch((error: unknown) => {
          if (isNotFound(error)) return null;
          throw error;
        });
      if (!next) break;
      letters.push(next);
      seq = next.seq + 1;
    }
    return letters.reverse();
  };

  const remove = async (jobId: string): Promise<void> => {
    const { jsm } = await open();
    try {
      await jsm.streams.deleteMessage(names.deadLetterStream, Number(jobId));
    } catch (error) {
      if ((error as { code?: unknown }).code === NO_MESSAGE_FOUND || isNotFound(error))
        throw new DeadLetterError(jobId, undefined);
      throw error;
    }
  };

  const replay = async (stored: StoredMsg): Promise<Replay> => {
    const letter = toDeadLetter(stored);
    const replayId = replayIdOf(letter.jobId, letter.failedAt ?? letter.enqueuedAt);
    const { jsm, js } = await open();
    await ensureStreams(jsm, names);
    // Written before the dead letter is removed: a crash in between leaves both, and replaying it
    // again publishes the same Nats-Msg-Id (nothing added within the duplicate window) and the same
    // replay id (handlers run once).
    const ack = await js.publish(names.subject, stored.data, {
      msgID: replayMessageId(replayId),
      headers: headersOf({
        attempt: 1,
        replay: { id: replayId, of: letter.jobId },
        enqueuedAt: letter.enqueuedAt,
      }),
    });
    await remove(letter.jobId);
    return { jobId: String(ack.seq), replayId, eventId: letter.eventId, replayOf: letter.jobId };
  };

  return {
    engine: 'nats',
    names,
    stats: async () => natsInboxStats((await open()).jsm, names),
    async list(range) {
      const { offset, limit } = checkPage(range);
      const letters = await all();
      return {
        items: letters.slice(offset, offset + limit).map(toDeadLetter),
        total: letters.length,
        offset,
      };
    },
    async get(jobId) {
      const stored = await read(jobId);
      return stored && toDeadLetter(stored);
    },
    async replay(jobId) {
      const stored = await read(jobId);
      if (!stored) throw new DeadLetterError(jobId, undefined);
      return replay(stored);
    },
    replayAll: ({ limit } = {}) =>
      replayEach(
        async () => (await all()).slice(0, 100),
        (stored) => String(stored.seq),
        replay,
        limit,
      ),
    async remove(jobId) {
      if (!(await read(jobId))) throw new DeadLetterError(jobId, undefined);
      await remove(jobId);
    },
    async close() {
      const current = opened;
      opened = undefined;
      clients = undefined;
      await (await current?.catch(() => undefined))?.close();
    },
  };
}

function toDeadLetter(stored: StoredMsg): DeadLetter {
  const meta = metaOf(stored.header);
  // The entry as the door wrote it: the payload alone (the headers are the worker's).
  const entry = entryOf(stored.data, undefined);
  const event = entry.event as Partial<DeadLetter['entry']['event']> | undefined;
  const failure = meta.failure;
  const storedAt = stored.time.getTime();
  return {
    jobId: String(stored.seq),
    eventId: typeof event?.id === 'string' ? event.id : '',
    eventType: typeof event?.type === 'string' ? event.type : '',
    entry,
    attempts: failure?.attempts ?? meta.attempt,
    lastError: failure?.lastError ?? 'dead-lettered without a recorded cause',
    stacktrace: failure?.stack ? [failure.stack] : [],
    receivedAt: typeof entry.receivedAt === 'number' ? entry.receivedAt : storedAt,
    enqueuedAt: meta.enqueuedAt ?? storedAt,
    lastAttemptAt: failure?.lastAttemptAt,
    failedAt: failure?.failedAt ?? storedAt,
    replayOf: meta.replay?.of,
  };
}
