/**
 * DynamoDBStore checked against the store model (checkStore) on dynalite (./dynalite.ts: the DynamoDB
 * API on this machine, not AWS): generated concurrent histories, each checked for linearizability, with
 * failures and slow answers injected around each request. The seed is new on every run (a failure
 * prints it); STORE_CHECK_SEED pins it to replay one.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStore } from 'service-webhooks/dynamodb';
import { type StoreCheckContext, storeModelSuite } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, test } from 'vitest';
import { storeCheckSeed } from '../../support/store-check.js';
import { clientFor, type RunningDynalite, startDynalite, uniqueTableName } from './dynalite.js';

const tableName = uniqueTableName('model');
let server: RunningDynalite;
let client: DynamoDBClient;

beforeAll(async () => {
  server = await startDynalite();
  // A patient client, as conformance.test.ts explains: dynalite answers one item's writes one by one.
  client = clientFor(server.endpoint, {
    maxAttempts: 1,
    requestHandler: { requestTimeout: 5_000, throwOnRequestTimeout: true, httpAgent: { maxSockets: 50 } },
  });
  await new DynamoDBStore({ client, tableName }).createTable({ timeToLive: false });
});

afterAll(async () => {
  client?.destroy();
  await server?.stop();
});

/**
 * The client as the store sees it, with the checker's fault hook around each request: a failure before
 * it is sent (nothing written), or after DynamoDB answered (the answer lost); or a slow answer.
 */
function faulty(fault: StoreCheckContext['fault']): DynamoDBClient {
  const send = async (command: Parameters<DynamoDBClient['send']>[0]) => {
    await fault('request');
    const answer = await client.send(command);
    await fault('answer');
    return answer;
  };
  return { send } as unknown as DynamoDBClient;
}

storeModelSuite({
  name: 'DynamoDBStore (dynalite)',
  createStore: ({ fault }) => new DynamoDBStore({ client: faulty(fault), tableName }),
  describe,
  test,
  histories: 100,
  timeLimitMs: 25_000,
  seed: storeCheckSeed(),
});
