// The worker: the function the SQS event source mapping invokes with batches of the inbox queue. It
// answers a partial batch response (the mapping needs ReportBatchItemFailures): a failed attempt is
// re-sent by the engine as a delayed copy carrying the next attempt number, so only a record another
// run holds comes back through SQS's visibility. Environment: as the door, plus DEAD_LETTER_QUEUE_URL;
// WORKER_ATTEMPTS and RETRY_DELAYS_MS shorten the schedule for the local run.
import { sqsHandler } from 'service-webhooks/sqs';
import { queueUrl, sqs, webhooks } from './receiver.js';

const delays = process.env.RETRY_DELAYS_MS?.split(',').map(Number);

export const handler = sqsHandler(webhooks, {
  client: sqs,
  queueUrl,
  // Given rather than read from the queue's RedrivePolicy: the function then needs no
  // sqs:GetQueueAttributes.
  deadLetterQueueUrl: process.env.DEAD_LETTER_QUEUE_URL!,
  attempts: Number(process.env.WORKER_ATTEMPTS ?? 20),
  backoff: delays ?? { initialDelayMs: 60_000 },
  // Under the function's 30 s timeout, so an attempt that overruns is judged by the engine (and
  // retried on its schedule) before Lambda kills the instance.
  handlerTimeoutMs: 20_000,
  // One JSON line per record: CloudWatch Logs Insights reads the fields.
  logger: {
    info: (record, message) => console.info(line(record, message)),
    warn: (record, message) => console.warn(line(record, message)),
    error: (record, message) => console.error(line(record, message)),
  },
});

function line(record: Record<string, unknown>, message?: string): string {
  const err = record.err instanceof Error ? record.err.message : record.err;
  return JSON.stringify({ message, ...record, ...(err === undefined ? {} : { err }) });
}
