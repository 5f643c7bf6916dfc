// The Lambda function the cold-start section bundles for this library: the lambda subpath and one
// handler, as examples/lambda/handler.ts (without its console.log, which would time the terminal).
import { createWebhooks } from 'service-webhooks';
import { lambdaHandler } from 'service-webhooks/lambda';

const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! });

webhooks.on('user.created', async () => {});

export const handler = lambdaHandler(webhooks);
