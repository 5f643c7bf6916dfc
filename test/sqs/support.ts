/** What the SQS inbox tests share: fauxqs (the SQS emulator) in the test process, queues, receivers. */
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { startFauxqs } from 'fauxqs';
import {
  type AnyWebhookEvent,
  createWebhooks,
  type IdempotencyStore,
  type InboxQueue,
  MemoryStore,
  type WebhookError,
  type WebhookEvent,
  type Webhooks,
  type WebhooksOptions,
} from 'service-webhooks';
import { signPayload } from 'service-webhooks/testing';

export const SECRET = 'whsec_sqs_tests';

export interface Fauxqs {
  readonly endpoint: string;
  /** A new SDK client on the emulator (fails fast: no SDK retries, a short timeout). */
  client(): SQSClient;
  stop(): Promise<void>;
}

/** Start fauxqs on a free loopback port. */
export async function startSqs(): Promise<Fauxqs> {
  const server = await startFauxqs({ port: 0, host: '127.0.0.1', logger: false });
  const endpoint = `http://127.0.0.1:${server.port}`;
  return {
    endpoint,
    client: () => sqsClient(endpoint),
    stop: () => server.stop(),
  };
}

/** An SDK client on `endpoint`, as an application would make one, with test credentials. */
export function sqsClient(endpoint: string): SQSClient {
  return new SQSClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 1,
  });
}

/** A unique name per test, for queues in a shared emulator. */
export function uniqueName(label: string): string {
  return `${label}-${crypto.randomUUID().slice(0, 8)}`;
}

export interface Queues {
  readonly queueUrl: string;
  readonly deadLetterQueueUrl: string;
  delete(): Promise<void>;
}

/**
 * An inbox queue and its dead-letter queue, wired by a RedrivePolicy (maxReceiveCount 20, as the
 * library's docs recommend), as an application would set them up.
 */
export async function createQueues(
  client: SQSClient,
  label: string,
  options: { fifo?: boolean; maxMessageBytes?: number; visibilityTimeoutSeconds?: number } = {},
): Promise<Queues> {
  const suffix = options.fifo ? '.fifo' : '';
  const name = uniqueName(label);
  const fifoAttributes = options.fifo ? { FifoQueue: 'true' } : {};
  const dlq = await client.send(
    new CreateQueueCommand({ QueueName: `${name}-dlq${suffix}`, Attributes: { ...fifoAttributes } }),
  );
  const { Attributes } = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl!, AttributeNames: ['QueueArn'] }),
  );
  const queue = await client.send(
    new CreateQueueCommand({
      QueueName: `${name}${suffix}`,
      Attributes: {
        ...fifoAttributes,
        VisibilityTimeout: String(options.visibilityTimeoutSeconds ?? 30),
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: Attributes!.QueueArn, maxReceiveCount: 20 }),
        ...(options.maxMessageBytes === undefined
          ? {}
          : { MaximumMessageSize: String(options.maxMessageBytes) }),
      },
    }),
  );
  return {
    queueUrl: queue.QueueUrl!,
    deadLetterQueueUrl: dlq.QueueUrl!,
    async delete() {
      await client.send(new DeleteQueueCommand({ QueueUrl: queue.QueueUrl! })).catch(() => {});
      await client.send(new DeleteQueueCommand({ QueueUrl: dlq.QueueUrl! })).catch(() => {});
    },
  };
}

/** Receive what `queueUrl` holds now (hidden for `visibility` seconds), up to `max` messages. */
export async function receiveAll(
  client: SQSClient,
  queueUrl: string,
  { max = 10, visibility = 30, waitSeconds = 0 } = {},
): Promise<Message[]> {
  // With a visibility of 0 SQS may hand one message out again in the next round: kept once.
  const messages = new Map<string, Message>();
  for (let round = 0; round < 20 && messages.size < max; round++) {
    const { Messages = [] } = await client.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: Math.min(10, max - messages.size),
        VisibilityTimeout: visibility,
        WaitTimeSeconds: waitSeconds,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    const fresh = Messages.filter((message) => !messages.has(message.MessageId!));
    if (fresh.length === 0) break;
    for (const message of fresh) messages.set(message.MessageId!, message);
  }
  return [...messages.values()];
}

export interface Receiver {
  readonly webhooks: Webhooks;
  /** What the receiver reported to onError. */
  readonly errors: WebhookError[];
  /** Every handler run: event id and ctx.attempt. */
  readonly runs: { eventId: string; attempt: number }[];
}

/**
 * A receiver whose `onAny` handler records each run and then does what `behaviour` says for it
 * (resolve, throw, wait).
 */
export function receiver(
  options: {
    store?: IdempotencyStore;
    inbox?: InboxQueue;
    behaviour?: (event: WebhookEvent | AnyWebhookEvent, attempt: number) => Promise<void> | void;
    receiver?: Partial<WebhooksOptions>;
  } = {},
): Receiver {
  const errors: WebhookError[] = [];
  const runs: { eventId: string; attempt: number }[] = [];
  const webhooks = createWebhooks({
    secret: SECRET,
    store: options.store ?? new MemoryStore(),
    ...(options.inbox ? { inbox: options.inbox } : {}),
    ...options.receiver,
  });
  webhooks.onError((error) => {
    errors.push(error);
  });
  webhooks.onAny(async (event, ctx) => {
    runs.push({ eventId: event.id, attempt: ctx.attempt });
    await options.behaviour?.(event, ctx.attempt);
  });
  return { webhooks, errors, runs };
}

/** Hand `event` to a receiver's door as a signed delivery. */
export function deliverTo(webhooks: Webhooks, event: AnyWebhookEvent | WebhookEvent | { body: string }) {
  const body = 'body' in event ? event.body : JSON.stringify(event);
  return webhooks.handle({
    body,
    headers: { 'content-type': 'application/json', 'x-service-signature': signPayload(body, SECRET) },
  });
}
