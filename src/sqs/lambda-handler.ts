/**
 * The SQS consumer as an AWS Lambda handler for an SQS event source mapping, with partial batch
 * responses: only the records that must come back through SQS's own visibility are reported failed.
 */

import type { SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import {
  type AnyWebhooks,
  ConfigurationError,
  type InboxBackoff,
  type InboxFlowOptions,
  type InboxLogger,
} from 'service-webhooks/core';
import { inboxLog } from '../inbox/log.js';
import { InboxRunner } from '../inbox/runner.js';
import { checkReceiver, flowSettings, runnerSettings } from '../inbox/worker-options.js';
import type { ReceivedMessage } from './message.js';
import { checkClientAndUrl, once, queueUrlOfArn, readDeadLetterQueueUrl } from './queue-settings.js';
import { queueNameOf, type SqsDelivery, SqsTransport, sqsDeliveryOf } from './transport.js';

/**
 * Options of {@link sqsHandler}. The flow-control options (`rate`, `concurrencyPerKey`, `flowControl`,
 * `holdMs`) are the long-running worker's: a record held back waits in the function up to `holdMs`
 * (billed time; `holdMs: 0` defers at once), then is hidden until about when a slot frees and listed
 * in `batchItemFailures`, spending no attempt.
 *
 * @example
 * ```ts
 * sqsHandler(webhooks, { client: new SQSClient({}), attempts: 20, backoff: { initialDelayMs: 60_000 } });
 * ```
 */
export interface SqsHandlerOptions extends InboxFlowOptions {
  /** The SDK v3 client the handler re-sends, dead-letters and defers with. */
  readonly client: SQSClient;
  /** The inbox queue's URL. @default from each record's `eventSourceARN` (through `GetQueueUrl`) */
  readonly queueUrl?: string;
  /** Where dead letters go. @default the queue's `RedrivePolicy` target */
  readonly deadLetterQueueUrl?: string;
  /** Attempts before an event is dead-lettered, the first included. @default 25 */
  readonly attempts?: number;
  /** The delays between attempts. @default 10 s doubling to 4 h */
  readonly backoff?: InboxBackoff;
  /** Budget of one attempt's handlers; keep it under the function's timeout. @default the receiver's */
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
  /** Where retries, deferrals and dead letters are logged. */
  readonly logger?: InboxLogger;
}

const WHAT = 'sqsHandler()';

/**
 * A Lambda handler for an SQS event source mapping on the inbox queue. Each record runs through
 * `webhooks.process`; the answer's `batchItemFailures` lists only the records that must come back
 * through SQS (a deferral: another run holds the claim, so the record is hidden until that run's lease
 * ends, spending no attempt; an SQS call that failed). A handled record, a failed attempt (re-sent as
 * a delayed copy carrying the next attempt number, on the receiver's schedule) and a dead letter (sent
 * to the dead-letter queue with its cause) are left out, so Lambda deletes them.
 *
 * Queue and mapping settings: `FunctionResponseTypes: ['ReportBatchItemFailures']` on the mapping
 * (without it a single failure returns the whole batch); the queue's `VisibilityTimeout` at least six
 * times the function's timeout (AWS's advice for a mapping), and the function's timeout above
 * `handlerTimeoutMs`; a `RedrivePolicy` with `maxReceiveCount` of 20 or more, the backstop for a record
 * that crashes the function every time (each deferral counts a receive too).
 *
 * Records of a standard queue run at once; a FIFO queue's run in order within their message group,
 * and once one must come back, the rest of its group in the batch is listed unrun. A record deferred
 * by flow control or a downstream's 429 after ten receives is written afresh (its receive count starts
 * over, so the queue's `maxReceiveCount` never dead-letters an event that was only waiting) and left
 * out of the answer, so the mapping deletes the original.
 *
 * `rate` and `concurrencyPerKey` count every invocation's runs and every worker's of the queue, in the
 * shared state `flowControl` names (a Redis or PostgreSQL: SQS keeps none); a record held back is
 * deferred as another run's claim is, listed and hidden, without spending an attempt.
 *
 * @example
 * ```ts
 * import { SQSClient } from '@aws-sdk/client-sqs';
 * import { sqsHandler } from 'service-webhooks/sqs';
 *
 * export const handler = sqsHandler(webhooks, { client: new SQSClient({}), attempts: 20 });
 * ```
 */
export function sqsHandler(
  webhooks: AnyWebhooks,
  options: SqsHandlerOptions,
): (event: SQSEvent) => Promise<SQSBatchResponse> {
  checkReceiver(webhooks, WHAT);
  checkClientAndUrl(WHAT, options?.client, options?.queueUrl, false);
  const settings = runnerSettings(WHAT, options);
  // Checked now, so a mistake fails the function's start rather than its first batch. The shared keys
  // are named by each source queue (`queue` below), as a long-running worker of that queue names them.
  const flow = flowSettings(WHAT, '', options, undefined);
  const { client, logger } = options;
  // One runner per source queue (a function may be mapped to several).
  const runners = new Map<string, () => Promise<InboxRunner<SqsDelivery>>>();
  const runnerOf = (arn: string) => {
    let runner = runners.get(arn);
    if (!runner) {
      runner = once(async () => {
        const queueUrl = options.queueUrl ?? (await queueUrlOfArn(client, arn));
        const deadLetterQueueUrl = once(async () => {
          const url = options.deadLetterQueueUrl ?? (await readDeadLetterQueueUrl(client, queueUrl));
          if (url === undefined) {
            throw new ConfigurationError(
              `${WHAT} needs a dead-letter queue: pass \`deadLetterQueueUrl\`, or give the queue a RedrivePolicy.`,
            );
          }
          return url;
        });
        const name = queueNameOf(queueUrl);
        // Lambda deletes what the answer does not list: the transport deletes nothing itself.
        const transport = new SqsTransport({
          client,
          queueUrl,
          deadLetterQueueUrl,
          deletes: false,
          warn: (record, message) => inboxLog(logger, 'warn', { inbox: name, ...record }, message),
        });
        return new InboxRunner(
          webhooks,
          transport,
          { ...settings, flow: flow && { ...flow, queue: name } },
          logger,
        );
      });
      runners.set(arn, runner);
    }
    return runner();
  };

  /**
   * What becomes of the record: `settled` (left out of the answer, so the mapping deletes it), `listed`
   * (it must come back through SQS), or `replaced` (deferred as a fresh copy: left out of the answer,
   * yet the event is still to run, so the rest of a FIFO group waits for it).
   */
  const run = async (record: SQSRecord): Promise<'settled' | 'listed' | 'replaced'> => {
    let runner: InboxRunner<SqsDelivery>;
    try {
      runner = await runnerOf(record.eventSourceARN);
    } catch {
      // The queue's URL could not be found: the record comes back after its visibility timeout.
      return 'listed';
    }
    const delivery = sqsDeliveryOf(receivedOf(record));
    const end = await runner.run(delivery);
    if (end.kind === 'deferred' && delivery.replaced) return 'replaced';
    // A deferral or a copy not yet due is hidden until its time; a settling that failed comes back.
    return end.kind === 'deferred' || end.kind === 'not-due' || end.kind === 'unsettled'
      ? 'listed'
      : 'settled';
  };

  return async (event: SQSEvent): Promise<SQSBatchResponse> => {
    // Records of a standard queue run at once. A FIFO queue's run in order within their message
    // group, and after one that must come back the rest of its group is not run and comes back too
    // (what Lambda asks of a FIFO partial batch response, so the group's order holds).
    const lanes = new Map<string, SQSRecord[]>();
    for (const record of event?.Records ?? []) {
      const group = record.attributes?.MessageGroupId;
      const lane = group === undefined ? `record ${record.messageId}` : `group ${group}`;
      lanes.set(lane, [...(lanes.get(lane) ?? []), record]);
    }
    const failed: string[] = [];
    await Promise.all(
      [...lanes.values()].map(async (lane) => {
        for (const [index, record] of lane.entries()) {
          const fate = await run(record);
          if (fate === 'settled') continue;
          const from = fate === 'listed' ? index : index + 1;
          failed.push(...lane.slice(from).map((held) => held.messageId));
          return;
        }
      }),
    );
    return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
  };
}

/** A Lambda record, as the transport reads a message. */
function receivedOf(record: SQSRecord): ReceivedMessage {
  const attributes: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(record.messageAttributes ?? {}))
    attributes[name] = value.stringValue;
  return {
    messageId: record.messageId,
    receiptHandle: record.receiptHandle,
    body: record.body,
    attributes,
    sentAt:
      record.attributes?.SentTimestamp === undefined ? undefined : Number(record.attributes.SentTimestamp),
    receiveCount: Number(record.attributes?.ApproximateReceiveCount ?? 1),
    groupId: record.attributes?.MessageGroupId,
  };
}
