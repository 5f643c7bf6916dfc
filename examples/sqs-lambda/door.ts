// The door: the function behind the Function URL. It verifies the signature over the raw bytes,
// claims the event id in DynamoDB and answers 200 once SQS has accepted the event; the handlers run
// in the worker (worker.ts). Environment: WEBHOOK_SECRET, INBOX_QUEUE_URL, WEBHOOK_TABLE.
import { lambdaHandler } from 'service-webhooks/lambda';
import { webhooks } from './receiver.js';

export const handler = lambdaHandler(webhooks);
