// The brought-store function on the DynamoDB store, as a Lambda deployment bundles it: the AWS SDK left
// out of the bundle (the Node runtimes provide it, and CDK's NodejsFunction leaves @aws-sdk/* out by
// default), so it is loaded from node_modules at run time, as Lambda loads it. For the whole cold start
// in context: the SDK's load, client, signing and (de)serialization are all timed; only the network is
// not, since nothing here can reach DynamoDB: the client's request handler answers every call at once,
// as a conditional write that succeeded (`{}`), so the first delivery is claimed and completed.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createWebhooks } from 'service-webhooks/core';
import { DynamoDBStore } from 'service-webhooks/dynamodb';
import { lambdaHandler } from 'service-webhooks/lambda';

const succeeded = {
  handle: async () => ({
    response: {
      statusCode: 200,
      headers: { 'content-type': 'application/x-amz-json-1.0' },
      body: new TextEncoder().encode('{}'),
    },
  }),
};

const client = new DynamoDBClient({
  region: 'eu-west-1',
  credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
  requestHandler: succeeded as never,
});

const webhooks = createWebhooks({
  secret: process.env.WEBHOOK_SECRET!,
  store: new DynamoDBStore({ client, tableName: 'webhook-events' }),
});

webhooks.on('user.created', async () => {});

export const handler = lambdaHandler(webhooks);
