/**
 * The queue's own settings the inbox needs, read once with `GetQueueAttributes`: its largest message
 * and its dead-letter queue (from its `RedrivePolicy`). An option set by the application wins.
 */
import { GetQueueAttributesCommand, GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { ConfigurationError } from 'service-webhooks/core';
import { DEFAULT_MAX_MESSAGE_BYTES, SQS_MAX_MESSAGE_BYTES } from './message.js';

/** Check a `maxMessageBytes` option: SQS's documented range is 1,024 to 1,048,576 bytes. */
export function checkMaxMessageBytes(what: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || value < 1_024 || value > SQS_MAX_MESSAGE_BYTES) {
    throw new ConfigurationError(
      `${what} \`maxMessageBytes\` must be a whole number of bytes from 1,024 to ${SQS_MAX_MESSAGE_BYTES} (SQS's MaximumMessageSize range); got ${String(value)}.`,
    );
  }
  return value;
}

/** Check the SDK client and a queue URL given as options. */
export function checkClientAndUrl(
  what: string,
  client: unknown,
  queueUrl: unknown,
  urlRequired: boolean,
): void {
  if (typeof (client as { send?: unknown } | undefined)?.send !== 'function') {
    throw new ConfigurationError(`${what} \`client\` must be an SQSClient from @aws-sdk/client-sqs.`);
  }
  if (queueUrl === undefined && !urlRequired) return;
  if (typeof queueUrl !== 'string' || !/^https?:\/\//.test(queueUrl)) {
    throw new ConfigurationError(
      `${what} \`queueUrl\` must be the queue's URL (https://sqs.<region>.amazonaws.com/<account>/<name>); got ${String(queueUrl)}.`,
    );
  }
}

/**
 * The queue's `MaximumMessageSize`; the documented default of 256 KiB when the attribute cannot be
 * read (no `sqs:GetQueueAttributes` permission), since refusing an event that would fit beats writing
 * one SQS refuses.
 */
export async function readMaxMessageBytes(client: SQSClient, queueUrl: string): Promise<number> {
  const { Attributes } = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['MaximumMessageSize'] }),
  );
  const value = Number(Attributes?.MaximumMessageSize);
  return Number.isSafeInteger(value) && value > 0 ? value : DEFAULT_MAX_MESSAGE_BYTES;
}

/**
 * The dead-letter queue's URL from the queue's `RedrivePolicy` (`deadLetterTargetArn`), looked up by
 * name and account; `undefined` when the queue has none.
 */
export async function readDeadLetterQueueUrl(
  client: SQSClient,
  queueUrl: string,
): Promise<string | undefined> {
  const { Attributes } = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['RedrivePolicy'] }),
  );
  const policy = Attributes?.RedrivePolicy;
  if (!policy) return undefined;
  const arn = (JSON.parse(policy) as { deadLetterTargetArn?: string }).deadLetterTargetArn;
  return arn === undefined ? undefined : queueUrlOfArn(client, arn);
}

/** A queue's URL from its ARN (`arn:aws:sqs:<region>:<account>:<name>`), through `GetQueueUrl`. */
export async function queueUrlOfArn(client: SQSClient, arn: string): Promise<string> {
  const parts = arn.split(':');
  const name = parts[5];
  const account = parts[4];
  if (parts[0] !== 'arn' || parts[2] !== 'sqs' || !name) {
    throw new ConfigurationError(`Not an SQS queue ARN: ${arn}.`);
  }
  const { QueueUrl } = await client.send(
    new GetQueueUrlCommand({ QueueName: name, ...(account ? { QueueOwnerAWSAccountId: account } : {}) }),
  );
  if (!QueueUrl) throw new ConfigurationError(`No queue URL for ${arn}.`);
  return QueueUrl;
}

/** A value computed once and shared by its callers; a failure is forgotten so the next call asks again. */
export function once<T>(load: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () => {
    pending ??= load();
    pending.catch(() => {
      pending = undefined;
    });
    return pending;
  };
}
