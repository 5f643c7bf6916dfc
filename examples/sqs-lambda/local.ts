// The deployment of template.yaml run on this machine, end to end. What is real: SQS is fauxqs (an
// implementation of the SQS API, not a mock), DynamoDB is dynalite (an implementation of the DynamoDB
// API), and the handlers are the deployed code, door.ts and worker.ts, unchanged. What this script
// plays, because no Lambda runtime runs here: the Function URL (it builds the payload 2.0 event Lambda
// would), and the SQS event source mapping (it receives batches as the mapping's pollers do, builds the
// exact SQSEvent records, invokes the worker, and deletes the records its answer does not list).
// Run: npx tsx examples/sqs-lambda/local.ts
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { APIGatewayProxyEventV2, Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { startFauxqs } from 'fauxqs';
import type { WebhookResponse } from 'service-webhooks';
import { DynamoDBStore } from 'service-webhooks/dynamodb';
import { sqsInboxAdmin } from 'service-webhooks/sqs';
import { createTestEvent, signPayload } from 'service-webhooks/testing';

const REGION = 'us-east-1';
const SECRET = process.env.WEBHOOK_SECRET ?? 'whsec_local';
// The template's figures: the worker's timeout, and the queue's visibility six times it.
const WORKER_TIMEOUT_SECONDS = 30;

// dynalite ships no types; it is an http.Server factory.
const dynalite = createRequire(import.meta.url)('dynalite') as (
  options: object,
) => import('node:http').Server;
const dynamo = dynalite({ createTableMs: 0 });
await new Promise<void>((resolve) => dynamo.listen(0, '127.0.0.1', resolve));
const fauxqs = await startFauxqs({ port: 0, host: '127.0.0.1', logger: false });

// What the template hands the functions, pointed at the local services. The SDK reads the endpoints
// from AWS_ENDPOINT_URL_<SERVICE>, so the functions' code is the deployed code: `new SQSClient({})`.
Object.assign(process.env, {
  AWS_REGION: REGION,
  AWS_ACCESS_KEY_ID: 'local',
  AWS_SECRET_ACCESS_KEY: 'local',
  AWS_ENDPOINT_URL_SQS: `http://127.0.0.1:${fauxqs.port}`,
  AWS_ENDPOINT_URL_DYNAMODB: `http://127.0.0.1:${(dynamo.address() as AddressInfo).port}`,
  WEBHOOK_SECRET: SECRET,
  WEBHOOK_TABLE: 'webhook-events',
  // The deployed schedule waits minutes between attempts: here two attempts, a second apart.
  WORKER_ATTEMPTS: process.env.WORKER_ATTEMPTS ?? '2',
  RETRY_DELAYS_MS: process.env.RETRY_DELAYS_MS ?? '1000',
});

// The resources of template.yaml: the table, the dead-letter queue, the inbox queue redriving to it.
// These clients are the script's (CloudFormation's part, and the mapping's); the functions make theirs.
const sqs = new SQSClient({ endpoint: process.env.AWS_ENDPOINT_URL_SQS! });
const dynamodb = new DynamoDBClient({});
await new DynamoDBStore({ client: dynamodb, tableName: 'webhook-events' }).createTable({ timeToLive: false });
const dlq = await sqs.send(new CreateQueueCommand({ QueueName: 'webhook-inbox-dlq' }));
const dlqArn = await arnOf(dlq.QueueUrl!);
const queue = await sqs.send(
  new CreateQueueCommand({
    QueueName: 'webhook-inbox',
    Attributes: {
      VisibilityTimeout: String(6 * WORKER_TIMEOUT_SECONDS),
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 20 }),
    },
  }),
);
const queueUrl = queue.QueueUrl!;
const queueArn = await arnOf(queueUrl);
process.env.INBOX_QUEUE_URL = queueUrl;
process.env.DEAD_LETTER_QUEUE_URL = dlq.QueueUrl!;

// Imported once the environment is set, as Lambda starts an instance with its configuration.
const door = (await import('./door.js')).handler;
const worker = (await import('./worker.js')).handler;

const functions = await import('./receiver.js');
const summary = { door: [] as { eventId: string; status: number; duplicate: boolean }[], batches: 0 };

try {
  const welcome = createTestEvent('user.created', { data: { email: 'ada@example.com' } });
  const failing = createTestEvent('user.created', { data: { email: 'grace@fail.invalid' } });
  const welcomeBody = JSON.stringify(welcome);
  await deliver(welcome.id, welcomeBody);
  // The sender's retry of the same delivery (its answer was lost, say): the same signed bytes.
  await deliver(welcome.id, welcomeBody);
  await deliver(failing.id, JSON.stringify(failing));

  await playEventSourceMapping();

  const admin = sqsInboxAdmin({ client: sqs, queueUrl, deadLetterQueueUrl: dlq.QueueUrl! });
  const { items } = await admin.list();
  for (const letter of items) {
    console.log(`dead letter: ${letter.eventId} after ${letter.attempts} attempts: ${letter.lastError}`);
  }
  await admin.close();
  // After the handlers ran, a late retry of the first delivery is still a duplicate.
  await deliver(welcome.id, welcomeBody);
  console.log(
    `result ${JSON.stringify({ ...summary, deadLetters: items.map(({ eventId, attempts }) => ({ eventId, attempts })) })}`,
  );
} finally {
  for (const client of [sqs, dynamodb, functions.sqs, functions.dynamodb]) client.destroy();
  await fauxqs.stop();
  await new Promise((resolve) => dynamo.close(resolve));
}

/** One Function URL request carrying a signed delivery, as the sender makes it. */
async function deliver(eventId: string, body: string): Promise<void> {
  const bytes = new TextEncoder().encode(body);
  const event: APIGatewayProxyEventV2 = {
    version: '2.0',
    routeKey: '$default',
    rawPath: '/',
    rawQueryString: '',
    headers: {
      'content-type': 'application/json',
      'content-length': String(bytes.byteLength),
      host: 'abcdefghij.lambda-url.us-east-1.on.aws',
      'user-agent': 'service-webhooks-sender/1.0',
      'x-service-signature': signPayload(bytes, SECRET),
    },
    requestContext: {
      accountId: 'anonymous',
      apiId: 'abcdefghij',
      domainName: 'abcdefghij.lambda-url.us-east-1.on.aws',
      domainPrefix: 'abcdefghij',
      http: {
        method: 'POST',
        path: '/',
        protocol: 'HTTP/1.1',
        sourceIp: '192.0.2.1',
        userAgent: 'service-webhooks-sender/1.0',
      },
      requestId: crypto.randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
    },
    body: Buffer.from(bytes).toString('base64'),
    isBase64Encoded: true,
  };
  // The door's timeout in the template is 10 s; its remaining time bounds the store and the send.
  const deadline = Date.now() + 10_000;
  const context = { getRemainingTimeInMillis: () => deadline - Date.now() } satisfies Partial<Context>;
  const result = (await door(event, context)) as WebhookResponse & { statusCode: number };
  const duplicate = JSON.parse(result.body).duplicate === true;
  summary.door.push({ eventId, status: result.statusCode, duplicate });
  console.log(`door: ${result.statusCode} ${result.body} for ${eventId}${duplicate ? ' (duplicate)' : ''}`);
}

/**
 * What the event source mapping does: receive up to 10 messages with every attribute, invoke the worker
 * with them as one SQSEvent, delete the records its answer does not list, leave those it lists to come
 * back after their visibility timeout. Until the queue holds nothing, visible, in flight or delayed.
 */
async function playEventSourceMapping(): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    if (Messages.length === 0) {
      if (await drained()) return;
      continue;
    }
    summary.batches++;
    const event: SQSEvent = { Records: Messages.map(recordOf) };
    const { batchItemFailures } = await worker(event);
    const failed = new Set(batchItemFailures.map((failure) => failure.itemIdentifier));
    const done = Messages.filter((message) => !failed.has(message.MessageId!));
    if (done.length > 0) {
      await sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: done.map((message, index) => ({
            Id: String(index),
            ReceiptHandle: message.ReceiptHandle!,
          })),
        }),
      );
    }
    console.log(
      `mapping: batch of ${Messages.length}: ${done.length} deleted, ${failed.size} left to come back`,
    );
  }
  throw new Error('the inbox queue did not drain within 60 s');
}

async function drained(): Promise<boolean> {
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: [
        'ApproximateNumberOfMessages',
        'ApproximateNumberOfMessagesNotVisible',
        'ApproximateNumberOfMessagesDelayed',
      ],
    }),
  );
  return Object.values(Attributes).every((count) => count === '0');
}

/** A received message as the event source mapping hands it to the function. */
function recordOf(message: Message): SQSRecord {
  const system = message.Attributes ?? {};
  return {
    messageId: message.MessageId!,
    receiptHandle: message.ReceiptHandle!,
    body: message.Body!,
    attributes: {
      ApproximateReceiveCount: system.ApproximateReceiveCount!,
      SentTimestamp: system.SentTimestamp!,
      SenderId: system.SenderId!,
      ApproximateFirstReceiveTimestamp: system.ApproximateFirstReceiveTimestamp!,
    },
    messageAttributes: Object.fromEntries(
      Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [
        name,
        {
          stringValue: value.StringValue,
          dataType: value.DataType!,
          stringListValues: [],
          binaryListValues: [],
        },
      ]),
    ),
    md5OfBody: message.MD5OfBody!,
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: REGION,
  };
}

async function arnOf(url: string): Promise<string> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }),
  );
  return Attributes!.QueueArn!;
}
