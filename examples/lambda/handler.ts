// An AWS Lambda function receiving the service's webhooks. The same handler serves an API Gateway REST
// API or HTTP API, a Function URL or an Application Load Balancer: point any of them at `handler`.
// Deploy with WEBHOOK_SECRET in the function's environment. Try it locally: npx tsx examples/lambda/invoke.ts
import { createWebhooks } from 'service-webhooks';
import { lambdaHandler } from 'service-webhooks/lambda';

const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! });

webhooks.on('user.created', async (event) => {
  console.log('user.created', event.data.email);
});

export const handler = lambdaHandler(webhooks);
