/**
 * DynamoDBStore checked against the store model (checkStore) on dynalite (./dynalite.ts: the DynamoDB
 * API on this machine, not AWS): generated concurrent histories, each checked for linearizability, with
 * failures and slow answers injected into requests on their way. The seed is new on every run (a failure
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
 * The client as the store sees it, with the checker's fault hook on each request once it is sent: a
 * failure (the write may or may not have landed; its answer is lost) or an answer slower than the
 * deadline. Not a delay before the request leaves: DynamoDB conditions have no server clock, so the
 * store reads the writer's clock (Date.now()) as it builds the request, and a lease counts from then.
 * A request held back for longer than a short lease would be written already ended, which the model,
 * counting a lease from when its write takes effect, rightly flags; with the docs' 45 s leases and
 * a 1 s request timeout it cannot happen.
 */
function faulty(fault: StoreCheckContext['fault']): DynamoDBClient {
  const send = async (command: Parameters<DynamoDBClient['send']>[0]) => {
    const answer = client.send(command);
    // Its rejection (a failed condition is an answer too) reaches the store once the hook lets the
    // answer through; marked handled now, so one that arrives while the hook waits is not reported as
    // an unhandled rejection.
    answer.catch(() => {});
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
  histories: 150,
  timeLimitMs: 25_000,
  seed: storeCheckSeed(),
});
