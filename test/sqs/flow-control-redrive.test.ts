/**
 * A throttled SQS message is hidden again (ChangeMessageVisibility), and SQS counts each return as a
 * receive: past the queue's maxReceiveCount its own redrive would move an event that was only waiting
 * to the dead-letter queue. The worker writes such a message afresh once it has been received ten
 * times, so its count starts over. Twelve 429s on a queue that redrives after eleven receives: the
 * thirteenth run happens, at attempt 1, and nothing is dead-lettered. (About 15 to 25 s: each wait is
 * at least the second a visibility counts in.)
 */
import { CreateQueueCommand, DeleteQueueCommand, GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { createWebhooks, MemoryStore, RateLimitedError } from 'service-webhooks';
import { sqsInbox, startSqsWorker } from 'service-webhooks/sqs';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { waitUntil } from '../support/wait-until.js';
import { type Fauxqs, SECRET, startSqs, uniqueName } from './support.js';

let sqs: Fauxqs;

beforeAll(async () => {
  sqs = await startSqs();
});

afterAll(async () => {
  await sqs?.stop();
});

test('SQS: a message rate limited more often than the queue’s maxReceiveCount is not dead-lettered by SQS’s redrive (a fresh copy restarts the count)', async () => {
  const sqsClient = sqs.client();
  const name = uniqueName('flow-redrive');
  const dlq = await sqsClient.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }));
  const { Attributes } = await sqsClient.send(
    new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl!, AttributeNames: ['QueueArn'] }),
  );
  // Eleven receives, then SQS's own redrive: twelve 429s would have crossed it.
  const queue = await sqsClient.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: {
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: Attributes!.QueueArn, maxReceiveCount: 11 }),
      },
    }),
  );
  const runs: number[] = [];
  const webhooks = createWebhooks({ secret: SECRET, store: new MemoryStore() });
  webhooks.onError(() => {});
  webhooks.on('payment.succeeded', (_event, ctx) => {
    runs.push(ctx.attempt);
    if (runs.length <= 12) throw new RateLimitedError(1_000);
  });
  const worker = startSqsWorker(webhooks, {
    client: sqsClient,
    queueUrl: queue.QueueUrl!,
    deadLetterQueueUrl: dlq.QueueUrl!,
    attempts: 1,
    waitTimeSeconds: 1,
    monitor: false,
  });
  try {
    await worker.waitUntilReady();
    const door = createWebhooks({
      secret: SECRET,
      store: new MemoryStore(),
      inbox: sqsInbox({ client: sqsClient, queueUrl: queue.QueueUrl! }),
    });
    expect((await deliver(door, createTestEvent('payment.succeeded'), { secret: SECRET })).status).toBe(200);
    await waitUntil('the thirteenth run', () => runs.length >= 13, 35_000);
    expect(new Set(runs)).toEqual(new Set([1]));
    expect((await worker.stats()).deadLettered).toBe(0);
  } finally {
    await worker.close();
    await sqsClient.send(new DeleteQueueCommand({ QueueUrl: queue.QueueUrl! })).catch(() => {});
    await sqsClient.send(new DeleteQueueCommand({ QueueUrl: dlq.QueueUrl! })).catch(() => {});
  }
}, 45_000);
