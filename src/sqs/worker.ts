/**
 * The long-running SQS consumer for containers (ECS, Kubernetes): long-polls the inbox queue, runs
 * each message through the shared consumer with a visibility heartbeat, and shuts down gracefully.
 */

import type { SQSClient } from '@aws-sdk/client-sqs';
import {
  type AnyWebhooks,
  ConfigurationError,
  type InboxBackoff,
  type InboxFlowOptions,
  type InboxLogger,
  type InboxMonitorOptions,
  type InboxStats,
} from 'service-webhooks/core';
import { inboxLog } from '../inbox/log.js';
import { InboxWorkerCore } from '../inbox/worker.js';
import { checkReceiver, flowSettings, wholeOption, workerSettings } from '../inbox/worker-options.js';
import { SQS_MAX_VISIBILITY_SECONDS } from './message.js';
import { checkClientAndUrl, once, readDeadLetterQueueUrl } from './queue-settings.js';
import { queueNameOf, type SqsDelivery, SqsTransport } from './transport.js';

/**
 * Options of {@link startSqsWorker}.
 *
 * @example
 * ```ts
 * startSqsWorker(webhooks, { client, queueUrl, concurrency: 20, attempts: 30 });
 * ```
 */
export interface SqsWorkerOptions extends InboxFlowOptions {
  /** The SDK v3 client; the worker never closes it. */
  readonly client: SQSClient;
  /** The inbox queue's URL (the door's). */
  readonly queueUrl: string;
  /**
   * Where dead letters go. Without it, the queue's `RedrivePolicy` names it (`deadLetterTargetArn`),
   * read at the start; a worker with neither does not start (`waitUntilReady` rejects).
   */
  readonly deadLetterQueueUrl?: string;
  /** Events this worker runs at once. @default 10 */
  readonly concurrency?: number;
  /**
   * Attempts before an event is dead-lettered, the first included. A run that found the event's claim
   * held elsewhere, and a run cut short by a crash, do not count.
   * @default 25
   */
  readonly attempts?: number;
  /** The delays between attempts (SQS counts them in whole seconds). @default 10 s doubling to 4 h */
  readonly backoff?: InboxBackoff;
  /** Budget of one attempt's handlers. @default the receiver's */
  readonly handlerTimeoutMs?: number;
  /**
   * Run entries that carry no seal, as doors before seals wrote them: only while the entries queued
   * before the upgrade drain (see the inbox docs' "Upgrading to sealed entries"); without it such an
   * entry is dead-lettered at once as `unauthenticated_inbox_entry`. An entry whose seal is present
   * but does not hold is refused either way, and while this is on a warning is said at most once a
   * minute.
   * @default false
   */
  readonly acceptUnsealedEntries?: boolean;
  /**
   * The visibility a received message is taken with, renewed every third of it while its handlers
   * run (so a long handler is not handed out again mid-run): after a worker died, its messages come
   * back this long after its last renewal. Keep the queue's own visibility timeout at least this.
   * @default 30
   */
  readonly visibilityTimeoutSeconds?: number;
  /** Long-poll wait of each `ReceiveMessage` (0 to 20). @default 20 */
  readonly waitTimeSeconds?: number;
  /** Read the figures every `intervalMs` and report a backlog; `false` turns it off. @default { intervalMs: 60_000 } */
  readonly monitor?: InboxMonitorOptions | false;
  /** Where the worker logs retries, deferrals, dead letters and connection trouble. */
  readonly logger?: InboxLogger;
}

/**
 * A running SQS worker.
 *
 * @example
 * ```ts
 * const worker = startSqsWorker(webhooks, { client, queueUrl });
 * await worker.waitUntilReady();
 * process.once('SIGTERM', () => void worker.close());
 * ```
 */
export interface SqsWorker {
  /** Resolves once the dead-letter queue is known and the worker polls; rejects when it cannot start. */
  waitUntilReady(): Promise<void>;
  /** The inbox's figures now. */
  stats(): Promise<InboxStats>;
  /** Messages whose handlers run now. */
  readonly running: number;
  /**
   * Stop polling and wait for the running handlers to settle (each at most `handlerTimeoutMs`) and
   * their messages to be settled on SQS. `force`: abandon them instead, touching nothing on SQS: they
   * come back after their visibility timeout, as after a crash.
   */
  close(force?: boolean): Promise<void>;
}

const WHAT = 'startSqsWorker()';

/**
 * Run the handlers of the events an SQS inbox holds: each message goes through `webhooks.process`
 * (claim, handlers with `ctx.attempt`, completion), so however often SQS delivers it (at-least-once,
 * a worker killed mid-handler) its handlers complete once. Failed attempts are retried on `backoff`
 * until `attempts`; the last failure (or a poison message, at once) goes to the dead-letter queue with
 * its cause and reports `EventDeadLetteredError` to `onError`.
 *
 * Queue settings: a dead-letter queue in the queue's `RedrivePolicy` with a `maxReceiveCount` of 20 or
 * more: the worker dead-letters failed events itself, and SQS's own redrive is the backstop for a
 * message that crashes every worker that receives it (a deferral, a crash and an early retry copy
 * each count a receive). The queue's `VisibilityTimeout` at least `visibilityTimeoutSeconds`.
 *
 * @example
 * ```ts
 * import { SQSClient } from '@aws-sdk/client-sqs';
 * import { startSqsWorker } from 'service-webhooks/sqs';
 *
 * const worker = startSqsWorker(webhooks, { client: new SQSClient({}), queueUrl: process.env.INBOX_QUEUE_URL! });
 * process.once('SIGTERM', () => void worker.close());
 * ```
 */
export function startSqsWorker(webhooks: AnyWebhooks, options: SqsWorkerOptions): SqsWorker {
  checkReceiver(webhooks, WHAT);
  checkClientAndUrl(WHAT, options?.client, options?.queueUrl, true);
  if (options.deadLetterQueueUrl !== undefined)
    checkClientAndUrl(`${WHAT} deadLetterQueueUrl:`, options.client, options.deadLetterQueueUrl, true);
  const visibility = wholeOption(
    WHAT,
    'visibilityTimeoutSeconds',
    options.visibilityTimeoutSeconds,
    30,
    1,
    SQS_MAX_VISIBILITY_SECONDS,
  );
  const waitTimeSeconds = wholeOption(WHAT, 'waitTimeSeconds', options.waitTimeSeconds, 20, 0, 20);
  const shared = workerSettings(WHAT, options);
  const { client, queueUrl, logger } = options;
  const name = queueNameOf(queueUrl);
  // SQS keeps no state a worker could share: `flowControl` names where (a Redis or PostgreSQL).
  const flow = flowSettings(WHAT, name, options, undefined);
  const deadLetterQueueUrl = once(async () => {
    const url = options.deadLetterQueueUrl ?? (await readDeadLetterQueueUrl(client, queueUrl));
    if (url === undefined) {
      throw new ConfigurationError(
        `${WHAT} needs a dead-letter queue: pass \`deadLetterQueueUrl\`, or give the queue a RedrivePolicy (deadLetterTargetArn, maxReceiveCount ≥ 20).`,
      );
    }
    return url;
  });
  const settings = { ...shared, flow };
  const transport = new SqsTransport({
    client,
    queueUrl,
    deadLetterQueueUrl,
    deletes: true,
    readyOnceDeadLettersKnown: true,
    visibilitySeconds: visibility,
    waitTimeSeconds,
    warn: (record, message) => inboxLog(logger, 'warn', { inbox: name, ...record }, message),
  });
  return new RunningSqsWorker(new InboxWorkerCore(webhooks, transport, settings, logger));
}

/** The worker behind {@link startSqsWorker}: the shared inbox worker over an SQS transport. */
class RunningSqsWorker implements SqsWorker {
  readonly #core: InboxWorkerCore<SqsDelivery>;

  constructor(core: InboxWorkerCore<SqsDelivery>) {
    this.#core = core;
  }

  get running(): number {
    return this.#core.running;
  }

  readonly waitUntilReady = (): Promise<void> => this.#core.ready;

  readonly stats = (): Promise<InboxStats> => this.#core.stats();

  readonly close = (force = false): Promise<void> => this.#core.close(force);
}
