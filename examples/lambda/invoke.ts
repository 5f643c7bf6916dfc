// Invoke examples/lambda/handler.ts the way Lambda would for one Function URL / HTTP API request: a
// payload format 2.0 event (shape from the API Gateway Developer Guide, "Create AWS Lambda proxy
// integrations for HTTP APIs in API Gateway") carrying a signed user.created delivery, base64-encoded
// as Lambda does for bodies it does not treat as text. Prints the answer Lambda would return.
// Run: WEBHOOK_SECRET=whsec_local npx tsx examples/lambda/invoke.ts [email]
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { handler } from './handler.js';

const email = process.argv[2] ?? 'ada@example.com';
const body = JSON.stringify(createTestEvent('user.created', { data: { email } }));
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
    'x-service-signature': signPayload(bytes, process.env.WEBHOOK_SECRET!),
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
    requestId: 'local-invoke',
    routeKey: '$default',
    stage: '$default',
    time: new Date().toUTCString(),
    timeEpoch: Date.now(),
  },
  body: btoa(String.fromCharCode(...bytes)),
  isBase64Encoded: true,
};

// The part of the Lambda context the handler uses: its remaining time bounds the webhook handlers.
const deadline = Date.now() + 30_000;
const context = { getRemainingTimeInMillis: () => deadline - Date.now() } satisfies Partial<Context>;

const result = await handler(event, context);
console.log('result', JSON.stringify(result));
