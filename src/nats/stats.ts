/** What a NATS JetStream inbox holds, as the figures every engine reports (`InboxStats`). */
import type { JetStreamManager } from '@nats-io/jetstream';
import type { InboxStats } from 'service-webhooks/core';
import { entryOf, type NatsInboxNames } from './message.js';
import { isNotFound } from './streams.js';

/**
 * Read the figures of a NATS inbox from the streams' and the consumer's state. The inbox stream keeps
 * a message until it is acknowledged (work-queue retention), so its count is the depth; `waiting` is
 * what the consumer has not handed out yet, and `active` what it handed out and has not had
 * acknowledged: the events running now, and also those `nak`ed until later (a deferral, a retry's copy
 * received early), which JetStream cannot tell apart; `delayed` is therefore 0. `oldestWaitingMs` is
 * read from the next message to hand out (its entry's `receivedAt`). Streams not made yet read as empty.
 *
 * @example
 * ```ts
 * const stats = await natsInboxStats(jsm, natsInboxNames('service-webhooks-inbox'));
 * ```
 */
export async function natsInboxStats(jsm: JetStreamManager, names: NatsInboxNames): Promise<InboxStats> {
  const [stream, consumer, dead] = await Promise.all([
    jsm.streams.info(names.stream).catch(orNothing),
    jsm.consumers.info(names.stream, names.consumer).catch(orNothing),
    jsm.streams.info(names.deadLetterStream).catch(orNothing),
  ]);
  const depth = stream?.state.messages ?? 0;
  const waiting = Math.min(depth, consumer ? consumer.num_pending : depth);
  let oldestWaitingMs: number | undefined;
  if (waiting > 0) {
    // The next message the consumer hands out: past the last it delivered.
    const next = await jsm.streams
      .getMessage(names.stream, {
        seq: (consumer?.delivered.stream_seq ?? 0) + 1,
        next_by_subj: names.subject,
        // JetStream's STREAM.MSG.GET takes `next_by_subj` (the client's type lists it for direct gets only).
      } as never)
      .catch(() => null);
    if (next) {
      const { receivedAt } = entryOf(next.data, next.header);
      const at = typeof receivedAt === 'number' ? receivedAt : next.time.getTime();
      oldestWaitingMs = Math.max(0, Date.now() - at);
    }
  }
  return {
    waiting,
    active: depth - waiting,
    delayed: 0,
    depth,
    deadLettered: dead?.state.messages ?? 0,
    oldestWaitingMs,
  };
}

function orNothing(error: unknown): undefined {
  if (isNotFound(error)) return undefined;
  throw error;
}
