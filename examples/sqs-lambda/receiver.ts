// What both functions share: the receiver is created the same way in the door and in the worker (same
// secret, same DynamoDB table), so the worker's claims and the door's are one dedup scope across every
// Lambda instance. Bundled into each function by esbuild, so each instance has its own copy.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { createWebhooks } from 'service-webhooks';
import { DynamoDBStore } from 'service-webhooks/dynamodb';
import { sqsInbox } from 'service-webhooks/sqs';

// Created once per instance, outside the handler, so warm invocations reuse their connections. Calls
// go to the endpoint the SDK resolves (the function's region; AWS_ENDPOINT_URL_SQS in the local run),
// not to the host of the queue's URL: on AWS the two are the same, and an emulator's queue URLs name a
// host that does not resolve.
export const sqs = new SQSClient({ useQueueUrlAsEndpoint: false });
export const queueUrl = process.env.INBOX_QUEUE_URL!;

// DynamoDB, not the MemoryStore: Lambda runs many instances at once and recycles them at will, so a
// memory only one instance holds would let a sender's retry that lands on another instance (or on a
// fresh one) run the handlers a second time. Fail fast, well within the receiver's storeTimeoutMs, so a
// slow table is a 503 the sender retries rather than a function timeout.
export const dynamodb = new DynamoDBClient({
  maxAttempts: 1,
  requestHandler: { connectionTimeout: 500, requestTimeout: 1_000, throwOnRequestTimeout: true },
});

export const webhooks = createWebhooks({
  secret: process.env.WEBHOOK_SECRET!,
  store: new DynamoDBStore({ client: dynamodb, tableName: process.env.WEBHOOK_TABLE! }),
  inbox: sqsInbox({ client: sqs, queueUrl }),
  // The queue's MaximumMessageSize is SQS's largest, 1 MiB; an entry carries about 10 KiB besides the
  // body, so a body at the receiver's default limit (1 MiB) could never be queued.
  maxBodyBytes: 1_000_000,
});

webhooks.onError((error, event) => console.error(`${error.code}: ${error.message}`, event?.id ?? ''));

// The handlers run in the worker only: with an inbox, the door verifies, deduplicates and queues.
webhooks.on('user.created', async (event, ctx) => {
  // A marked address stands for a handler that keeps failing (a downstream outage, a bad record), to
  // show the retries and the dead letter.
  if (event.data.email.endsWith('@fail.invalid')) {
    throw new Error(`cannot welcome ${event.data.email}`);
  }
  console.log(`user.created ${event.data.email} (attempt ${ctx.attempt})`);
});
