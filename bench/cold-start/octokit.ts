// The same function written on @octokit/webhooks, which has no Lambda adapter: read the HTTP API
// event (base64 or not), verify and receive one event, answer 200 or 400.

import { type EmitterWebhookEventName, Webhooks } from '@octokit/webhooks';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

const webhooks = new Webhooks({ secret: process.env.WEBHOOK_SECRET! });

webhooks.on('push', async () => {});

export async function handler(event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> {
  const headers = event.headers;
  const body = event.isBase64Encoded
    ? Buffer.from(event.body ?? '', 'base64').toString('utf8')
    : (event.body ?? '');
  try {
    await webhooks.verifyAndReceive({
      id: headers['x-github-delivery'] ?? '',
      name: headers['x-github-event'] as EmitterWebhookEventName,
      payload: body,
      signature: headers['x-hub-signature-256'] ?? '',
    });
    return { statusCode: 200, body: '' };
  } catch {
    return { statusCode: 400, body: '' };
  }
}
