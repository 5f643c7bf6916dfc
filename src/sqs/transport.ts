/**
 * SQS as an inbox transport, for the long-running worker and the Lambda handler alike: a pull engine.
 * A received message's visibility is its lease (renewed while its handlers run), a delete is the
 * acknowledgement, a deferral hides the message until the other run's lease ends, a dead letter is a
 * copy sent to the dead-letter queue with its cause.
 *
 * Why retries are copies, not `ChangeMessageVisibility`: SQS's `ApproximateReceiveCount` also counts
 * a receive by a worker that crashed and a deferral (another worker held the claim), so it cannot be
 * the attempt count: a worker killed mid-handler would spend one of the event's attempts, and the
 * run after it would see `ctx.attempt === 2`. The attempt number therefore travels with the message
 * (`sw-attempt`, sealed by the receiver in `sw-attempt-seal` so that a changed one is refused), and
 * only a failed attempt writes the next one: a copy with `attempt + 1`, delayed by the receiver's
 * schedule (`DelaySeconds` up to SQS's 15 minutes; a longer delay, or any on a FIFO queue, which
 * refuses per-message delays, carries `sw-not-before`, and a worker that receives it early hides it
 * again with `ChangeMessageVisibility` without counting, or, due within the second that visibility
 * cannot count, holds it until due), and the original is deleted. A crash between the two leaves both
 * copies: the store's claim runs the handlers once. A deferral only changes the visibility to the end
 * of the other run's lease and spends nothing.
 */

import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { InboxStats } from 'service-webhooks/core';
import type {
  DeadLetter,
  DeferReason,
  EarlyCopies,
  InboxDelivery,
  InboxTransport,
} from '../inbox/transport.js';
import {
  deduplicationId,
  entryOf,
  type FailureRecord,
  type MessageMeta,
  messageOf,
  metaOf,
  type ReceivedMessage,
  SQS_MAX_DELAY_SECONDS,
  SQS_MAX_VISIBILITY_SECONDS,
} from './message.js';
import { sqsInboxStats } from './stats.js';

/**
 * Receives of one throttled message before it is copied afresh: half the 20 the docs ask of a queue's
 * `maxReceiveCount`, so a crash or two on top still leaves room.
 */
const RECOPY_AFTER_RECEIVES = 10;

/**
 * A received message, as the shared worker runs it: the attempt and replay from its attributes.
 *
 * @example
 * ```ts
 * const delivery = sqsDeliveryOf(received(message)); // delivery.meta.notBefore, delivery.attempt
 * ```
 */
export interface SqsDelivery extends InboxDelivery {
  readonly message: ReceivedMessage;
  readonly meta: MessageMeta;
  /**
   * Set by a deferral that wrote the message afresh (see `SqsTransport.defer`): this message is done
   * with. The worker deleted it; a Lambda's answer leaves it out, so the event source mapping does.
   */
  replaced: boolean;
}

/**
 * What the transport is made with, checked by the worker or the Lambda handler.
 *
 * @example
 * ```ts
 * new SqsTransport({ client, queueUrl, deadLetterQueueUrl: async () => dlqUrl, deletes: false, warn: (record, message) => logger.warn(record, message) });
 * ```
 */
export interface SqsTransportSettings {
  readonly client: SQSClient;
  readonly queueUrl: string;
  /** The dead-letter queue's URL (an option, or the queue's `RedrivePolicy`). */
  readonly deadLetterQueueUrl: () => Promise<string>;
  /**
   * Whether the transport deletes what it settled: the worker does; a Lambda event source mapping
   * deletes what its handler does not list as failed.
   */
  readonly deletes: boolean;
  /** Whether `ready` waits for the dead-letter queue's URL (the worker: it does not start without one). */
  readonly readyOnceDeadLettersKnown?: boolean;
  /** The visibility a message is received with and renewed to while it runs (the worker's). */
  readonly visibilitySeconds?: number;
  /** Long-poll wait of each receive (the worker's). */
  readonly waitTimeSeconds?: number;
  /** Where the transport's own trouble is said (a renewal or a hide that failed). */
  readonly warn: (record: Record<string, unknown>, message: string) => void;
}

/**
 * The transport behind `startSqsWorker` and `sqsHandler`.
 *
 * @example
 * ```ts
 * const runner = new InboxRunner(webhooks, new SqsTransport(settings), runnerSettings, logger);
 * const end = await runner.run(sqsDeliveryOf(received(message)));
 * ```
 */
export class SqsTransport implements InboxTransport<SqsDelivery> {
  readonly name: string;
  readonly redelivery = 'the message comes back after its visibility timeout';
  readonly receiveTrouble = 'webhook inbox: cannot receive from SQS; retrying every second';
  readonly receiveRetryMs = 1_000;
  readonly attemptTravels = true;
  readonly ready: Promise<void> | undefined;
  readonly #settings: SqsTransportSettings;

  constructor(settings: SqsTransportSettings) {
    this.#settings = settings;
    this.name = queueNameOf(settings.queueUrl);
    if (settings.readyOnceDeadLettersKnown) this.ready = settings.deadLetterQueueUrl().then(() => undefined);
  }

  readonly stats = async (): Promise<InboxStats> =>
    sqsInboxStats(this.#settings.client, this.#settings.queueUrl, await this.#settings.deadLetterQueueUrl());

  async receive(max: number, signal: AbortSignal): Promise<SqsDelivery[]> {
    const { client, queueUrl, waitTimeSeconds, visibilitySeconds } = this.#settings;
    const answer = await client.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: Math.min(10, max),
        WaitTimeSeconds: waitTimeSeconds,
        VisibilityTimeout: visibilitySeconds,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
      { abortSignal: signal },
    );
    return (answer.Messages ?? []).map((message) => sqsDeliveryOf(received(message)));
  }

  /**
   * A retry's copy received before its time (a delay past SQS's 15 minutes, or a FIFO queue, which
   * hands its copy out at once) is hidden again, counting nothing. One due within the second waits in
   * the worker, invisible meanwhile (the worker's renewals; a Lambda batch's visibility timeout):
   * SQS counts visibility in whole seconds.
   */
  readonly earlyCopies: EarlyCopies<SqsDelivery> = {
    notBefore: (delivery) => delivery.meta.notBefore,
    holdBackFromMs: 1_000,
    holdBack: (delivery, earlyMs) => this.#hide(delivery, earlyMs),
  };

  extend(delivery: SqsDelivery): () => void {
    const { client, queueUrl, visibilitySeconds } = this.#settings;
    if (visibilitySeconds === undefined) return () => {};
    // Renewed every third of the visibility, so two renewals may fail before the message reappears.
    const heartbeat = setInterval(
      () => {
        client
          .send(
            new ChangeMessageVisibilityCommand({
              QueueUrl: queueUrl,
              ReceiptHandle: delivery.message.receiptHandle,
              VisibilityTimeout: visibilitySeconds,
            }),
          )
          .catch((error: unknown) =>
            this.#settings.warn(
              { messageId: delivery.message.messageId, err: error },
              'webhook inbox: could not renew a message’s visibility',
            ),
          );
      },
      (visibilitySeconds * 1000) / 3,
    );
    return () => clearInterval(heartbeat);
  }

  async acknowledge(delivery: SqsDelivery): Promise<void> {
    if (!this.#settings.deletes) return;
    const { client, queueUrl } = this.#settings;
    await client.send(
      new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: delivery.message.receiptHandle }),
    );
  }

  /**
   * Hidden until the other run's lease ends, or until flow control lets it run; the message itself
   * stays. But each such return counts a receive, and past the queue's `maxReceiveCount` SQS's own
   * redrive would dead-letter an event that was only waiting: a throttled message received
   * {@link RECOPY_AFTER_RECEIVES} times or more is written again as a fresh copy (same attempt, same
   * seal, due after `delayMs`), whose count starts over, and the original is `replaced`: deleted here
   * by the worker; left out of a Lambda's answer, so that its event source mapping deletes it.
   */
  async defer(delivery: SqsDelivery, delayMs: number, reason?: DeferReason): Promise<void> {
    const throttled = reason !== undefined && reason !== 'held';
    if (throttled && delivery.message.receiveCount >= RECOPY_AFTER_RECEIVES) {
      const meta: MessageMeta = { ...delivery.meta, notBefore: Date.now() + delayMs, failure: undefined };
      await this.#send(this.#settings.queueUrl, delivery.message, meta, delayMs);
      delivery.replaced = true;
      await this.acknowledge(delivery);
      return;
    }
    await this.#hide(delivery, delayMs);
  }

  async retry(
    delivery: SqsDelivery,
    next: { attempt: number; delayMs: number; attemptSeal: string | undefined },
  ): Promise<void> {
    const meta: MessageMeta = {
      ...delivery.meta,
      attempt: next.attempt,
      attemptSeal: next.attemptSeal,
      notBefore: Date.now() + next.delayMs,
      failure: undefined,
    };
    await this.#send(this.#settings.queueUrl, delivery.message, meta, next.delayMs);
    await this.acknowledge(delivery);
  }

  async deadLetter(delivery: SqsDelivery, dead: DeadLetter): Promise<void> {
    const failure: FailureRecord = {
      reason: dead.reason as FailureRecord['reason'],
      attempts: dead.attempt,
      lastError: dead.message,
      stack: dead.stack ?? '',
      failedAt: Date.now(),
      lastAttemptAt: dead.startedAt,
    };
    const deadLetterQueueUrl = await this.#settings.deadLetterQueueUrl();
    await this.#send(
      deadLetterQueueUrl,
      delivery.message,
      { ...delivery.meta, notBefore: undefined, failure },
      0,
    );
    await this.acknowledge(delivery);
  }

  /** Hide a message for `delayMs` (whole seconds, at most SQS's 12 hours); said, not thrown, when SQS refused. */
  async #hide(delivery: SqsDelivery, delayMs: number): Promise<void> {
    const seconds = Math.min(SQS_MAX_VISIBILITY_SECONDS - 60, Math.max(1, Math.ceil(delayMs / 1000)));
    try {
      await this.#settings.client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: this.#settings.queueUrl,
          ReceiptHandle: delivery.message.receiptHandle,
          VisibilityTimeout: seconds,
        }),
      );
    } catch (error) {
      // The message comes back after the visibility it was received with: a deferral a little early.
      this.#settings.warn(
        { messageId: delivery.message.messageId, err: error },
        'webhook inbox: could not change the visibility of a message',
      );
    }
  }

  /**
   * Write `message`'s entry with `meta` to `queueUrl`. On a FIFO queue the copy keeps its group and
   * takes a deduplication id of its own (SQS drops a repeated one for 5 minutes): derived from the
   * original message's id, so a crash between this write and the original's delete, and the rerun it
   * causes, writes the same id and SQS keeps one copy.
   */
  async #send(queueUrl: string, message: ReceivedMessage, meta: MessageMeta, delayMs: number): Promise<void> {
    const outgoing = messageOf(entryOf(message), meta);
    const fifo = queueUrl.endsWith('.fifo');
    const delaySeconds = fifo ? 0 : Math.min(SQS_MAX_DELAY_SECONDS, Math.max(0, Math.round(delayMs / 1000)));
    const group = message.groupId ?? deduplicationId(message.messageId);
    await this.#settings.client.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: message.body,
        MessageAttributes: outgoing.attributes,
        ...(delaySeconds > 0 ? { DelaySeconds: delaySeconds } : {}),
        ...(fifo
          ? {
              MessageGroupId: group,
              MessageDeduplicationId: deduplicationId(
                `${queueUrl}\n${message.messageId}`,
                meta.attempt,
                meta.failure ? 'dead-letter' : undefined,
              ),
            }
          : {}),
      }),
    );
  }
}

/**
 * A received message as the shared worker runs it.
 *
 * @example
 * ```ts
 * const delivery = sqsDeliveryOf(receivedOf(record));
 * ```
 */
export function sqsDeliveryOf(message: ReceivedMessage): SqsDelivery {
  const meta = metaOf(message);
  return {
    message,
    meta,
    entry: entryOf(message),
    attempt: meta.attempt,
    replayId: meta.replay?.id,
    ids: { messageId: message.messageId },
    unnamed: `(message ${message.messageId})`,
    replaced: false,
  };
}

/**
 * A message from `ReceiveMessage`, as the transport reads it.
 *
 * @example
 * ```ts
 * const messages = (answer.Messages ?? []).map(received);
 * ```
 */
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

/**
 * The queue's name, for logs: the last part of its URL.
 *
 * @example
 * ```ts
 * queueNameOf('https://sqs.eu-west-1.amazonaws.com/123456789012/inbox'); // 'inbox'
 * ```
 */
export function queueNameOf(queueUrl: string): string {
  return queueUrl.slice(queueUrl.lastIndexOf('/') + 1);
}
