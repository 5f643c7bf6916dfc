/**
 * One received message, run once: the consumer both the Lambda handler and the long-running worker
 * share. It runs the entry through `webhooks.process`, judges a failure with the engine-agnostic
 * verdicts (`judgeFailure`), and settles the message on SQS: done, a deferral, a retry, a dead letter.
 *
 * Why retries are copies, not `ChangeMessageVisibility`: SQS's `ApproximateReceiveCount` also counts
 * a receive by a worker that crashed and a deferral (another worker held the claim), so it cannot be
 * the attempt count: a worker killed mid-handler would spend one of the event's attempts, and the
 * run after it would see `ctx.attempt === 2`. The attempt number therefore travels with the message
 * (`sw-attempt`, sealed by the receiver in `sw-attempt-seal` so that a changed one is refused), and
 * only a failed attempt writes the next one: a copy with `attempt + 1`, delayed by
 * the receiver's schedule (`DelaySeconds` up to SQS's 15 minutes; a longer delay, or any on a FIFO
 * queue, which refuses per-message delays, carries `sw-not-before`, and a worker that receives it
 * early hides it again with `ChangeMessageVisibility` without counting, or, due within the second that
 * visibility cannot count, holds it until due), and the original is
 * deleted. A crash between the two leaves both copies: the store's claim runs the handlers once. A
 * deferral only changes the visibility to the end of the other run's lease and spends nothing.
 */

import { ChangeMessageVisibilityCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import {
  EventDeadLetteredError,
  type InboxLogger,
  type ProcessOptions,
  type WebhookEvent,
  type Webhooks,
} from 'service-webhooks/core';
import { type AttemptOutcome, describeFailure, judgeFailure } from '../inbox/attempt-outcome.js';
import type { Schedule } from '../inbox/backoff.js';
import { failureFields, inboxLog } from '../inbox/log.js';
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

/** What the consumer needs, checked and resolved by the worker or the Lambda handler. */
export interface ConsumerSettings {
  readonly client: SQSClient;
  readonly queueUrl: string;
  readonly fifo: boolean;
  readonly attempts: number;
  readonly retries: Schedule;
  readonly handlerTimeoutMs: number | undefined;
  /** Run entries without a seal (`acceptUnsealedEntries`, during an upgrade). */
  readonly acceptUnsealedEntries: boolean;
  /** The dead-letter queue's URL (an option, or the queue's `RedrivePolicy`). */
  readonly deadLetterQueueUrl: () => Promise<string>;
  readonly logger: InboxLogger | undefined;
  /** For log records: the queue's name. */
  readonly queueName: string;
}

/**
 * How a message ended on this run:
 * - `delete`: settled (handled, a duplicate, retried as a new copy, dead-lettered): delete it.
 * - `keep`: leave it to SQS's visibility (a deferral or an early retry copy, hidden until its time;
 *   or an SQS call that failed, so the message comes back after its visibility timeout and runs again
 *   at the same attempt).
 */
export type Settlement = 'delete' | 'keep';

/** How the caller follows a run: its abort signal, and a word when the handlers have settled. */
export interface RunControl {
  readonly signal?: AbortSignal;
  /**
   * Called when `process` has settled, before the message is settled on SQS: stop the heartbeat.
   * `false` says the worker was abandoned (crash, forced close): the message is left as it is.
   */
  readonly runEnded?: () => boolean;
}

/**
 * Run one received message and settle it on SQS (all but the delete: the worker deletes, a Lambda
 * event source mapping deletes what its handler does not report as failed).
 */
export async function consumeMessage(
  webhooks: Webhooks,
  settings: ConsumerSettings,
  message: ReceivedMessage,
  control: RunControl = {},
): Promise<Settlement> {
  const meta = metaOf(message);
  const early = meta.notBefore === undefined ? 0 : meta.notBefore - Date.now();
  if (early >= 1_000) {
    // A retry copy received before its time (a delay past 15 minutes, or a FIFO queue): hidden again,
    // counting nothing.
    await hide(settings, message, early);
    return 'keep';
  }
  // Due within the second: too soon to hide (SQS counts visibility in whole seconds), and a FIFO queue
  // hands its copy out at once, so it waits here until due rather than run early. The message stays
  // invisible meanwhile (the worker's heartbeat; a Lambda batch's visibility timeout).
  if (early > 0 && !(await waitFor(early, control.signal))) return 'keep';
  const now = Date.now();
  const entry = entryOf(message);
  const run: { -readonly [K in keyof ProcessOptions]: ProcessOptions[K] } = { attempt: meta.attempt };
  if (control.signal) run.signal = control.signal;
  if (settings.handlerTimeoutMs !== undefined) run.handlerTimeoutMs = settings.handlerTimeoutMs;
  if (meta.replay) run.replayId = meta.replay.id;
  if (settings.acceptUnsealedEntries) run.acceptUnsealed = true;
  try {
    await webhooks.process(entry, run);
    control.runEnded?.();
    return 'delete';
  } catch (error) {
    // Settled before anything else touches the message: a heartbeat must not undo a deferral.
    if (control.runEnded?.() === false) return 'keep';
    const outcome = judgeFailure(error, meta.attempt, settings.attempts, settings.retries);
    return settle(webhooks, settings, message, meta, outcome, now);
  }
}

async function settle(
  webhooks: Webhooks,
  settings: ConsumerSettings,
  message: ReceivedMessage,
  meta: MessageMeta,
  outcome: Exclude<AttemptOutcome, { kind: 'done' }>,
  startedAt: number,
): Promise<Settlement> {
  const event = entryOf(message).event as Partial<WebhookEvent> | undefined;
  const eventId = typeof event?.id === 'string' ? event.id : `(message ${message.messageId})`;
  const record = { messageId: message.messageId, eventId, attempt: meta.attempt };
  switch (outcome.kind) {
    case 'defer': {
      // Another run holds the claim: come back once its lease is over, spending no attempt.
      await hide(settings, message, outcome.delayMs);
      log(
        settings,
        'info',
        { ...record, delayMs: outcome.delayMs },
        'webhook inbox: event held by another worker; deferred',
      );
      return 'keep';
    }
    case 'retry': {
      try {
        // The copy's attempt is sealed by the receiver, bound to the door's seal the entry carries.
        const { attemptSeal } = await webhooks.sealAttempt(entryOf(message), meta.attempt + 1);
        const next: MessageMeta = {
          ...meta,
          attempt: meta.attempt + 1,
          attemptSeal,
          notBefore: Date.now() + outcome.delayMs,
          failure: undefined,
        };
        await send(settings, settings.queueUrl, message, next, outcome.delayMs);
      } catch (error) {
        log(
          settings,
          'warn',
          { ...record, err: error },
          'webhook inbox: could not queue the retry; the message comes back after its visibility timeout',
        );
        return 'keep';
      }
      log(
        settings,
        'warn',
        { ...record, ...failureFields(outcome.error), nextAttemptInMs: outcome.delayMs },
        'webhook inbox: attempt failed; retrying',
      );
      return 'delete';
    }
    case 'dead-letter': {
      const { message: lastError, stack } = describeFailure(outcome.error);
      const failure: FailureRecord = {
        reason: outcome.reason,
        attempts: meta.attempt,
        lastError,
        stack: stack ?? '',
        failedAt: Date.now(),
        lastAttemptAt: startedAt,
      };
      try {
        const dlq = await settings.deadLetterQueueUrl();
        await send(settings, dlq, message, { ...meta, notBefore: undefined, failure }, 0);
      } catch (error) {
        log(
          settings,
          'error',
          { ...record, err: error },
          'webhook inbox: could not dead-letter the event; the message comes back after its visibility timeout',
        );
        return 'keep';
      }
      log(
        settings,
        'error',
        { ...record, ...failureFields(outcome.error), reason: outcome.reason },
        'webhook inbox: event dead-lettered',
      );
      const type = typeof event?.type === 'string' ? event.type : undefined;
      webhooks.telemetry?.deadLettered(type);
      webhooks.report(
        new EventDeadLetteredError(eventId, meta.attempt, { cause: outcome.error }),
        event as WebhookEvent | undefined,
      );
      return 'delete';
    }
  }
}

/** Wait `ms`; false when `signal` was aborted first (the worker closing: the message comes back). */
function waitFor(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const abort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', abort, { once: true });
  });
}

/** Hide a message for `delayMs` (whole seconds, at most SQS's 12 hours); false when SQS refused. */
async function hide(settings: ConsumerSettings, message: ReceivedMessage, delayMs: number): Promise<boolean> {
  const seconds = Math.min(SQS_MAX_VISIBILITY_SECONDS - 60, Math.max(1, Math.ceil(delayMs / 1000)));
  try {
    await settings.client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: settings.queueUrl,
        ReceiptHandle: message.receiptHandle,
        VisibilityTimeout: seconds,
      }),
    );
    return true;
  } catch (error) {
    // The message comes back after the visibility it was received with: a deferral a little early.
    log(
      settings,
      'warn',
      { messageId: message.messageId, err: error },
      'webhook inbox: could not change the visibility of a message',
    );
    return false;
  }
}

/**
 * Write `message`'s entry with `meta` to `queueUrl`. On a FIFO queue the copy keeps its group and
 * takes a deduplication id of its own (SQS drops a repeated one for 5 minutes): derived from the
 * original message's id, so a crash between this write and the original's delete, and the rerun it
 * causes, writes the same id and SQS keeps one copy.
 */
async function send(
  settings: ConsumerSettings,
  queueUrl: string,
  message: ReceivedMessage,
  meta: MessageMeta,
  delayMs: number,
): Promise<void> {
  const outgoing = messageOf(entryOf(message), meta);
  const fifo = queueUrl.endsWith('.fifo');
  const delaySeconds = fifo ? 0 : Math.min(SQS_MAX_DELAY_SECONDS, Math.max(0, Math.round(delayMs / 1000)));
  const group = message.groupId ?? deduplicationId(message.messageId);
  await settings.client.send(
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

function log(
  settings: ConsumerSettings,
  level: 'info' | 'warn' | 'error',
  record: Record<string, unknown>,
  message: string,
): void {
  inboxLog(settings.logger, level, { inbox: settings.queueName, ...record }, message);
}

/** The queue's name, for logs: the last part of its URL. */
export function queueNameOf(queueUrl: string): string {
  return queueUrl.slice(queueUrl.lastIndexOf('/') + 1);
}
