/**
 * The worker's side of the inbox on NATS JetStream: pulls from the workers' durable consumer, runs
 * each event through `webhooks.process`, retries it on the receiver's own schedule, dead-letters it
 * after the last attempt, and moves what JetStream stopped handing out (`MaxDeliver`) to the dead
 * letters when the server's advisory says so.
 */
import { type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type {
  AnyWebhooks,
  InboxBackoff,
  InboxFlowOptions,
  InboxLogger,
  InboxMonitorOptions,
  InboxStats,
} from 'service-webhooks/core';
import { InboxWorkerCore, type WorkerSettings } from '../inbox/worker.js';
import { checkReceiver, flowSettings, wholeOption, workerSettings } from '../inbox/worker-options.js';
import { type NatsInboxConnection, openConnection } from './connection.js';
import { copyMessageId, entryOf, headersOf, metaOf, type NatsInboxNames, natsInboxNames } from './message.js';
import { ensureConsumer, ensureStreams } from './streams.js';
import { type NatsDelivery, NatsTransport } from './transport.js';

/**
 * Options of {@link startNatsWorker}.
 *
 * @example
 * ```ts
 * startNatsWorker(webhooks, { connection: 'nats://127.0.0.1:4222', concurrency: 20, attempts: 30 });
 * ```
 */
export interface NatsWorkerOptions extends InboxFlowOptions {
  /** A NATS connection (never closed by the worker), or a `nats://` URL (the worker's own, closed by `close()`). */
  readonly connection: NatsInboxConnection;
  /** @default 'service-webhooks-inbox' */
  readonly stream?: string;
  /** Events this worker runs at once. @default 10 */
  readonly concurrency?: number;
  /**
   * Attempts at an event before it is dead-lettered, the first included. A deferral (the event held
   * by another run) and a worker's crash spend none.
   * @default 25
   */
  readonly attempts?: number;
  /** The delays between attempts. @default INBOX_DEFAULTS.backoff */
  readonly backoff?: InboxBackoff;
  /** Budget of the handlers of one attempt. @default 300_000, the core's default for `process` */
  readonly handlerTimeoutMs?: number;
  /**
   * Run entries that carry no seal, as doors before seals wrote them: only while the entries queued
   * before the upgrade drain; without it such an entry is dead-lettered at once as
   * `unauthenticated_inbox_entry`.
   * @default false
   */
  readonly acceptUnsealedEntries?: boolean;
  /**
   * The consumer's `AckWait`: how long after a worker stopped (a crash, a blocked event loop) its
   * events are handed out again. A running event's is renewed every third of it (`working()`), so
   * it bounds no handler. Written on the consumer by each worker as it starts.
   * @default 30_000
   */
  readonly ackWaitMs?: number;
  /**
   * The consumer's `MaxDeliver`: deliveries of one message before JetStream stops handing it out and
   * a worker moves it to the dead letters as `crashed` (an event that kills every worker that runs
   * it). Every delivery counts: a deferral's and a retry copy received early too, so keep it well
   * above a few.
   * @default 20
   */
  readonly maxDeliveries?: number;
  /** How long one pull waits for events (JetStream's `expires`, at least 1 s). @default 5_000 */
  readonly pollMs?: number;
  /** How long to wait for JetStream's acknowledgement of a retry's or a dead letter's copy. @default 5_000 */
  readonly publishTimeoutMs?: number;
  /** Read, log and check the inbox's figures; `false` turns it off. @default { intervalMs: 60_000, maxWaitMs: 600_000 } */
  readonly monitor?: InboxMonitorOptions | false;
  /** Where the worker logs its start, retries, dead letters and the monitor's figures. */
  readonly logger?: InboxLogger;
}

/**
 * A running NATS inbox worker.
 *
 * @example
 * ```ts
 * const worker = await startNatsWorker(webhooks, { connection });
 * process.once('SIGTERM', () => void worker.close());
 * ```
 */
export interface NatsWorker {
  /** The inbox's stream, subject, consumer and dead-letter stream. */
  readonly names: NatsInboxNames;
  /** The inbox's figures now. */
  stats(): Promise<InboxStats>;
  /**
   * Stop taking events, wait for the running handlers to settle and record their outcome, then close
   * the worker's own connection (not yours). `force` does not wait and records nothing more: the
   * running events are handed out again once their AckWait ended, as after a crash.
   */
  close(force?: boolean): Promise<void>;
}

const WHAT = 'startNatsWorker()';

interface Settings extends WorkerSettings {
  readonly names: NatsInboxNames;
  readonly ackWaitMs: number;
  readonly maxDeliveries: number;
  readonly pollMs: number;
  readonly publishTimeoutMs: number;
}

function resolve(options: NatsWorkerOptions): Settings {
  return {
    names: natsInboxNames(options?.stream, WHAT),
    ...workerSettings(WHAT, options),
    ackWaitMs: wholeOption(WHAT, 'ackWaitMs', options.ackWaitMs, 30_000, 300),
    maxDeliveries: wholeOption(WHAT, 'maxDeliveries', options.maxDeliveries, 20, 2),
    pollMs: wholeOption(WHAT, 'pollMs', options.pollMs, 5_000, 1_000),
    publishTimeoutMs: wholeOption(WHAT, 'publishTimeoutMs', options.publishTimeoutMs, 5_000),
    // JetStream keeps no state workers could share for this: `flowControl` names where (a Redis or
    // PostgreSQL), as for SQS.
    flow: flowSettings(WHAT, natsInboxNames(options?.stream, WHAT).stream, options, undefined),
  };
}

/**
 * Run the handlers of queued events from a NATS JetStream inbox: each message goes through
 * `webhooks.process` (claim, handlers with `ctx.attempt`, completion), so however often JetStream
 * hands it out (a worker killed mid-handler, a second write by the door past the duplicate window) its
 * handlers complete once. Attempts are the worker's, carried in the message's headers: a failed
 * attempt publishes the next as a copy due after `backoff`'s delay and acknowledges the failed one; the
 * last failure, or a poison or unauthenticated entry, publishes a dead letter (the dead-letter stream,
 * with the cause in headers) and reports `EventDeadLetteredError` to `onError`. Resolves once the
 * streams and the consumer exist and the worker pulls.
 *
 * @example
 * ```ts
 * import { createWebhooks } from 'service-webhooks';
 * import { startNatsWorker } from 'service-webhooks/nats';
 *
 * const webhooks = createWebhooks({ secret, store });
 * webhooks.on('payment.succeeded', async (event, ctx) => ledger.record(event.data, { signal: ctx.signal }));
 * const worker = await startNatsWorker(webhooks, { connection: process.env.NATS_URL!, concurrency: 20 });
 * process.once('SIGTERM', () => void worker.close());
 * ```
 */
export async function startNatsWorker(
  webhooks: AnyWebhooks,
  options: NatsWorkerOptions,
): Promise<NatsWorker> {
  checkReceiver(webhooks, WHAT);
  const settings = resolve(options);
  const opened = await openConnection(options.connection, WHAT, 'worker');
  try {
    const { connection } = opened;
    const jsm = await jetstreamManager(connection, { timeout: settings.publishTimeoutMs });
    const { names } = settings;
    await ensureStreams(jsm, names);
    await ensureConsumer(jsm, names, { ackWaitMs: settings.ackWaitMs, maxDeliver: settings.maxDeliveries });
    const js = jetstream(connection, { timeout: settings.publishTimeoutMs });
    const transport = new NatsTransport({
      js,
      jsm,
      consumer: js.consumers.get(names.stream, names.consumer),
      names,
      ackWaitMs: settings.ackWaitMs,
      pollMs: settings.pollMs,
      publishTimeoutMs: settings.publishTimeoutMs,
    });
    const core = new InboxWorkerCore(webhooks, transport, settings, options.logger);
    await core.ready;
    const advisories = watchMaxDeliveries(connection, jsm, settings, core);
    return {
      names,
      stats: core.stats,
      close: async (force = false) => {
        advisories.unsubscribe();
        await core.close(force);
        await opened.close();
      },
    };
  } catch (error) {
    await opened.close();
    throw error;
  }
}

/**
 * JetStream stops handing out a message delivered `MaxDeliver` times and says so in an advisory; one
 * worker of the consumer's (a queue group) moves that message to the dead letters as `crashed` and
 * reports it. An advisory no worker heard (none running) leaves the message in the stream, counted in
 * the figures, until replayed by hand.
 */
function watchMaxDeliveries(
  connection: NatsConnection,
  jsm: JetStreamManager,
  settings: Settings,
  core: InboxWorkerCore<NatsDelivery>,
): Subscription {
  const { names, publishTimeoutMs } = settings;
  const js = jetstream(connection, { timeout: publishTimeoutMs });
  return connection.subscribe(
    `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${names.stream}.${names.consumer}`,
    {
      queue: `${names.consumer}-advisories`,
      callback: (error, advisory) => {
        if (error) return;
        void (async () => {
          const { stream_seq: sequence, deliveries } = advisory.json<{
            stream_seq: number;
            deliveries: number;
          }>();
          const stored = await jsm.streams.getMessage(names.stream, { seq: sequence });
          if (!stored) return;
          const meta = metaOf(stored.header);
          const lastError = `abandoned: delivered ${deliveries} times and never acknowledged (workers that stopped while running it: crash, out of memory?), JetStream's MaxDeliver`;
          await js.publish(names.deadLetterSubject, stored.data, {
            msgID: copyMessageId('dead-letter', names.stream, sequence, 0),
            headers: headersOf({
              attempt: meta.attempt,
              replay: meta.replay,
              enqueuedAt: meta.enqueuedAt ?? stored.time.getTime(),
              failure: {
                reason: 'crashed',
                attempts: meta.attempt,
                lastError,
                stack: '',
                failedAt: Date.now(),
                lastAttemptAt: undefined,
                of: sequence,
              },
            }),
            timeout: publishTimeoutMs,
          });
          await jsm.streams.deleteMessage(names.stream, sequence);
          const entry = entryOf(stored.data, stored.header);
          core.runner.deadLettered(
            { entry, attempt: meta.attempt, ids: { sequence }, unnamed: `(message ${sequence})` },
            new Error(lastError),
            'crashed',
          );
        })().catch((failure: unknown) =>
          core.log(
            'error',
            { err: failure },
            'webhook inbox: could not dead-letter a message JetStream stopped handing out',
          ),
        );
      },
    },
  );
}
