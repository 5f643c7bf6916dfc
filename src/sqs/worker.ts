/**
 * The long-running SQS consumer for containers (ECS, Kubernetes): long-polls the inbox queue, runs
 * each message through the shared consumer with a visibility heartbeat, and shuts down gracefully.
 */

import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import {
  ConfigurationError,
  formatDuration,
  INBOX_DEFAULTS,
  type InboxBackoff,
  type InboxGauges,
  type InboxLogger,
  type InboxMonitorOptions,
  type InboxStats,
  type Webhooks,
} from 'service-webhooks/core';
import { schedule } from '../inbox/backoff.js';
import { inboxLog } from '../inbox/log.js';
import { InboxMonitor } from '../inbox/monitor.js';
import {
  acceptUnsealedOption,
  checkReceiver,
  monitorSettings,
  wholeOption,
} from '../inbox/worker-options.js';
import { type ConsumerSettings, consumeMessage, queueNameOf } from './consumer.js';
import { isFifoQueue, type ReceivedMessage, SQS_MAX_VISIBILITY_SECONDS } from './message.js';
import { checkClientAndUrl, once, readDeadLetterQueueUrl } from './queue-settings.js';
import { sqsInboxStats } from './stats.js';

/**
 * Options of {@link startSqsWorker}.
 *
 * @example
 * ```ts
 * startSqsWorker(webhooks, { client, queueUrl, concurrency: 20, attempts: 30 });
 * ```
 */
export interface SqsWorkerOptions {
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
export function startSqsWorker(webhooks: Webhooks, options: SqsWorkerOptions): SqsWorker {
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
  const settings = {
    concurrency: wholeOption(WHAT, 'concurrency', options.concurrency, 10, 1),
    waitTimeSeconds: wholeOption(WHAT, 'waitTimeSeconds', options.waitTimeSeconds, 20, 0, 20),
    visibility,
  };
  const attempts = wholeOption(WHAT, 'attempts', options.attempts, INBOX_DEFAULTS.attempts, 1);
  const handlerTimeoutMs =
    options.handlerTimeoutMs === undefined
      ? undefined
      : wholeOption(WHAT, 'handlerTimeoutMs', options.handlerTimeoutMs, 0, 1);
  const monitor = monitorSettings(WHAT, options.monitor);
  const { client, queueUrl } = options;
  const deadLetterQueueUrl = once(async () => {
    const url = options.deadLetterQueueUrl ?? (await readDeadLetterQueueUrl(client, queueUrl));
    if (url === undefined) {
      throw new ConfigurationError(
        `${WHAT} needs a dead-letter queue: pass \`deadLetterQueueUrl\`, or give the queue a RedrivePolicy (deadLetterTargetArn, maxReceiveCount ≥ 20).`,
      );
    }
    return url;
  });
  const consumer: ConsumerSettings = {
    client,
    queueUrl,
    fifo: isFifoQueue(queueUrl),
    attempts,
    retries: schedule(options.backoff, WHAT),
    handlerTimeoutMs,
    acceptUnsealedEntries: acceptUnsealedOption(WHAT, options.acceptUnsealedEntries),
    deadLetterQueueUrl,
    logger: options.logger,
    queueName: queueNameOf(queueUrl),
  };
  return new RunningSqsWorker(webhooks, consumer, settings, monitor, options.logger);
}

/** One message being run: its heartbeat, and whether the worker abandoned it. */
interface Running {
  heartbeat: ReturnType<typeof setInterval> | undefined;
  done: Promise<void>;
}

class RunningSqsWorker implements SqsWorker {
  readonly #webhooks: Webhooks;
  readonly #consumer: ConsumerSettings;
  readonly #settings: { concurrency: number; waitTimeSeconds: number; visibility: number };
  readonly #logger: InboxLogger | undefined;
  readonly #running = new Set<Running>();
  readonly #polling = new AbortController();
  readonly #ready: Promise<void>;
  readonly #loop: Promise<void>;
  readonly #monitor: InboxMonitor | undefined;
  readonly #stopObserving: (() => void) | undefined;
  /** Set by a forced close: nothing more is settled, renewed or deleted on SQS. */
  #abandoned = false;
  #closing: Promise<void> | undefined;
  /** Wakes the poll loop when a slot frees up. */
  #slotFreed: (() => void) | undefined;
  #lastPollWarning = 0;

  constructor(
    webhooks: Webhooks,
    consumer: ConsumerSettings,
    settings: { concurrency: number; waitTimeSeconds: number; visibility: number },
    monitor: Required<InboxMonitorOptions> | undefined,
    logger: InboxLogger | undefined,
  ) {
    this.#webhooks = webhooks;
    this.#consumer = consumer;
    this.#settings = settings;
    this.#logger = logger;
    this.#ready = consumer.deadLetterQueueUrl().then(() => undefined);
    // An unhandled rejection here would end the process; waitUntilReady() reports it.
    this.#ready.catch((error: unknown) =>
      this.#log('error', { err: error }, 'webhook inbox worker cannot start'),
    );
    this.#loop = this.#ready.then(
      () => this.#poll(),
      () => undefined,
    );
    this.#monitor = monitor && new InboxMonitor(webhooks, consumer.queueName, this.stats, monitor, logger);
    this.#stopObserving = webhooks.telemetry?.observeInbox(this.#gauges);
    const retrySpanMs = consumer.retries.spanMs(consumer.attempts);
    this.#log(
      'info',
      { concurrency: settings.concurrency, attempts: consumer.attempts, retrySpanMs },
      `webhook inbox worker started: ${consumer.attempts} attempts over about ${formatDuration(retrySpanMs)}`,
    );
  }

  get running(): number {
    return this.#running.size;
  }

  readonly waitUntilReady = (): Promise<void> => this.#ready;

  readonly stats = async (): Promise<InboxStats> =>
    sqsInboxStats(this.#consumer.client, this.#consumer.queueUrl, await this.#consumer.deadLetterQueueUrl());

  readonly #gauges = async (): Promise<InboxGauges> => {
    const stats = await this.stats();
    return {
      queue: this.#consumer.queueName,
      depth: stats.depth,
      oldestAgeSeconds: 0,
      deadLetters: stats.deadLettered,
    };
  };

  readonly close = async (force = false): Promise<void> => {
    if (force) this.#abandon();
    this.#closing ??= (async () => {
      this.#monitor?.stop();
      this.#stopObserving?.();
      this.#polling.abort();
      this.#slotFreed?.();
      await this.#loop;
    })();
    await this.#closing;
    // Abandoned handlers are not waited for: they may run on, but touch nothing on SQS.
    if (!this.#abandoned) await Promise.all([...this.#running].map((running) => running.done));
  };

  /** Stop renewing and settling anything: the running messages come back after their visibility. */
  #abandon(): void {
    this.#abandoned = true;
    for (const running of this.#running) clearInterval(running.heartbeat);
  }

  async #poll(): Promise<void> {
    const { client, queueUrl } = this.#consumer;
    const { concurrency, waitTimeSeconds, visibility } = this.#settings;
    while (!this.#polling.signal.aborted) {
      if (this.#running.size >= concurrency) {
        await new Promise<void>((resolve) => {
          this.#slotFreed = resolve;
        });
        continue;
      }
      let messages: Message[] = [];
      try {
        const answer = await client.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: Math.min(10, concurrency - this.#running.size),
            WaitTimeSeconds: waitTimeSeconds,
            VisibilityTimeout: visibility,
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
          { abortSignal: this.#polling.signal },
        );
        messages = answer.Messages ?? [];
      } catch (error) {
        if (this.#polling.signal.aborted) break;
        this.#warnPoll(error);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        continue;
      }
      // Received while being closed: left to come back after their visibility, unrun.
      if (this.#abandoned) break;
      for (const message of messages) this.#start(received(message));
    }
  }

  #start(message: ReceivedMessage): void {
    const { client, queueUrl } = this.#consumer;
    const { visibility } = this.#settings;
    const running: Running = { heartbeat: undefined, done: Promise.resolve() };
    // Renewed every third of the visibility, so two renewals may fail before the message reappears.
    running.heartbeat = setInterval(
      () => {
        if (this.#abandoned) return;
        client
          .send(
            new ChangeMessageVisibilityCommand({
              QueueUrl: queueUrl,
              ReceiptHandle: message.receiptHandle,
              VisibilityTimeout: visibility,
            }),
          )
          .catch((error: unknown) =>
            this.#log(
              'warn',
              { messageId: message.messageId, err: error },
              'webhook inbox: could not renew a message’s visibility',
            ),
          );
      },
      (visibility * 1000) / 3,
    );
    const stopHeartbeat = () => {
      clearInterval(running.heartbeat);
      return !this.#abandoned;
    };
    running.done = (async () => {
      try {
        const settlement = await consumeMessage(this.#webhooks, this.#consumer, message, {
          runEnded: stopHeartbeat,
        });
        if (settlement === 'delete' && !this.#abandoned) {
          await client.send(
            new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.receiptHandle }),
          );
        }
      } catch (error) {
        // A delete that failed: the message comes back and its run is a duplicate the store recognises.
        this.#log(
          'warn',
          { messageId: message.messageId, err: error },
          'webhook inbox: could not settle a message on SQS',
        );
      } finally {
        clearInterval(running.heartbeat);
        this.#running.delete(running);
        this.#slotFreed?.();
        this.#slotFreed = undefined;
      }
    })();
    this.#running.add(running);
  }

  /** Polling trouble is said once a minute: the SDK's errors would repeat every second otherwise. */
  #warnPoll(error: unknown): void {
    const now = Date.now();
    if (now - this.#lastPollWarning < 60_000) return;
    this.#lastPollWarning = now;
    this.#log('warn', { err: error }, 'webhook inbox: cannot receive from SQS; retrying every second');
  }

  #log(level: 'info' | 'warn' | 'error', record: Record<string, unknown>, message: string): void {
    inboxLog(this.#logger, level, { inbox: this.#consumer.queueName, ...record }, message);
  }
}

/** A message from `ReceiveMessage`, as the consumer reads it. */
export function received(message: Message): ReceivedMessage {
  const attributes: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(message.MessageAttributes ?? {}))
    attributes[name] = value.StringValue;
  const system = message.Attributes ?? {};
  return {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes,
    sentAt: system.SentTimestamp === undefined ? undefined : Number(system.SentTimestamp),
    receiveCount: Number(system.ApproximateReceiveCount ?? 1),
    groupId: system.MessageGroupId,
  };
}
