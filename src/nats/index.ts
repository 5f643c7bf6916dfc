/**
 * `service-webhooks/nats`: the durable inbox on NATS JetStream. The door (`natsInbox`, passed to
 * `createWebhooks({ inbox })`) verifies, deduplicates and publishes each event to the inbox stream and
 * answers 200 once JetStream acknowledged storing it; workers (`startNatsWorker`) pull from one durable
 * consumer, run the handlers under the idempotency store's claim, retry on the receiver's own schedule,
 * and dead-letter what still fails to `<stream>-dead-letters`; `natsInboxAdmin` lists, inspects,
 * replays and removes dead letters. `@nats-io/jetstream` and `@nats-io/transport-node` are optional
 * peers: `npm install @nats-io/jetstream @nats-io/transport-node`.
 *
 * How it maps onto JetStream:
 * - The inbox stream (file storage, work-queue retention) holds an event until a worker acknowledges
 *   it. The door publishes with the digest of the dedup key as `Nats-Msg-Id`: a second write of one
 *   event within the stream's duplicate window (two minutes by default) adds nothing; past it, the
 *   store's claim runs the handlers once all the same.
 * - Workers share the durable pull consumer `<stream>-workers`. Its `AckWait` is the lease of a
 *   delivery, renewed by in-progress acknowledgements while the handlers run: a worker that dies
 *   leaves its events to come back after `AckWait`, spending none of their attempts.
 * - The attempt travels in the message's headers, sealed by the receiver: a failed attempt publishes
 *   the next as a copy due after the schedule's delay and acknowledges the failed one; a copy handed
 *   out early is `nak`ed until due, and a deferral (another run holds the claim) `nak`s the message
 *   for the other run's lease; neither spends an attempt.
 * - Dead letters are copies in `<stream>-dead-letters` with their cause in headers; an event that
 *   JetStream stopped handing out (`MaxDeliver`, every worker that ran it died) is moved there by a
 *   worker that hears the server's advisory.
 *
 * @example
 * ```ts
 * import { connect } from '@nats-io/transport-node';
 * import { createWebhooks } from 'service-webhooks';
 * import { natsInbox, startNatsWorker } from 'service-webhooks/nats';
 *
 * const connection = await connect({ servers: process.env.NATS_URL! });
 * // web.ts: the door
 * const door = createWebhooks({ secret, store, inbox: natsInbox({ connection }) });
 * // worker.ts: the handlers
 * const webhooks = createWebhooks({ secret, store });
 * webhooks.on('user.created', async (event, ctx) => sendWelcomeMail(event.data.email, { signal: ctx.signal }));
 * await startNatsWorker(webhooks, { connection });
 * ```
 * @packageDocumentation
 */

export type { DeadLetter, DeadLetterPage, InboxAdmin, InboxStats, Replay } from 'service-webhooks/core';
export {
  DeadLetterError,
  INBOX_DEFAULTS,
  InboxBacklogError,
  type InboxBackoff,
  type InboxLogger,
  type InboxLogRecord,
  type InboxMonitorOptions,
} from 'service-webhooks/core';
export { type NatsInboxAdmin, type NatsInboxAdminOptions, natsInboxAdmin } from './admin.js';
export type { NatsInboxConnection } from './connection.js';
export { type NatsInbox, type NatsInboxOptions, natsInbox } from './inbox-queue.js';
export {
  DEFAULT_NATS_STREAM,
  doorMessageId,
  HEADER,
  type NatsFailureRecord,
  type NatsInboxNames,
  type NatsMessageMeta,
  natsInboxNames,
} from './message.js';
export { natsInboxStats } from './stats.js';
export { type NatsWorker, type NatsWorkerOptions, startNatsWorker } from './worker.js';
