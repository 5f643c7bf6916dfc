/**
 * DynamoDBStore's resource operations (the `ordering` option) against dynalite (see ./dynalite.ts:
 * an implementation of the DynamoDB API that runs on this machine, not AWS). dynalite has no
 * TransactWriteItems, which completeOrdered sends: fixtures/dynalite-server.cjs adds it in front of
 * dynalite, isolated by a lock and atomic by putting back what a cancelled transaction wrote, and
 * this file checks that layer first (what it answers is what DynamoDB documents), then the shared
 * direct tests of ../resource-operations.ts, then what only this store has (the resource item).
 */
import {
  type AttributeValue,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBStore } from 'service-webhooks/dynamodb';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { resourceOperationsTests } from '../resource-operations.js';
import { clientFor, type RunningDynalite, startDynalite, uniqueTableName } from './dynalite.js';

const tableName = uniqueTableName('ordering');
// dynalite answers one item's writes one after another, and the transaction layer runs each
// transaction alone: 20 racing calls take longer than DynamoDB would (see conformance.test.ts).
const PATIENT = {
  maxAttempts: 1,
  requestHandler: { requestTimeout: 10_000, throwOnRequestTimeout: true, httpAgent: { maxSockets: 200 } },
};
let server: RunningDynalite;
let client: DynamoDBClient;

beforeAll(async () => {
  server = await startDynalite();
  client = clientFor(server.endpoint, PATIENT);
  await new DynamoDBStore({ client, tableName }).createTable({ timeToLive: false });
});

afterAll(async () => {
  client?.destroy();
  await server?.stop();
});

async function item(pk: string): Promise<Record<string, AttributeValue> | undefined> {
  const { Item } = await client.send(
    new GetItemCommand({ TableName: tableName, Key: { pk: { S: pk } }, ConsistentRead: true }),
  );
  return Item;
}

describe("the fixture's TransactWriteItems over dynalite", () => {
  test('writes every item when every condition holds', async () => {
    await client.send(
      new TransactWriteItemsCommand({
        TransactItems: [
          { Put: { TableName: tableName, Item: { pk: { S: 'tx-a' }, n: { N: '1' } } } },
          {
            Update: {
              TableName: tableName,
              Key: { pk: { S: 'tx-b' } },
              UpdateExpression: 'SET n = :n',
              ExpressionAttributeValues: { ':n': { N: '2' } },
            },
          },
        ],
      }),
    );
    expect((await item('tx-a'))?.n).toEqual({ N: '1' });
    expect((await item('tx-b'))?.n).toEqual({ N: '2' });
  });

  test("writes nothing when one condition fails, and names each item's reason (the item with ALL_OLD)", async () => {
    await client.send(
      new PutItemCommand({ TableName: tableName, Item: { pk: { S: 'tx-c' }, n: { N: '5' } } }),
    );
    const cancelled = await client
      .send(
        new TransactWriteItemsCommand({
          TransactItems: [
            { Put: { TableName: tableName, Item: { pk: { S: 'tx-d' }, n: { N: '1' } } } },
            {
              Update: {
                TableName: tableName,
                Key: { pk: { S: 'tx-c' } },
                UpdateExpression: 'SET n = :n',
                ConditionExpression: 'n < :n',
                ExpressionAttributeValues: { ':n': { N: '3' } },
                ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
              },
            },
          ],
        }),
      )
      .catch((error: unknown) => error);
    expect(cancelled).toMatchObject({
      name: 'TransactionCanceledException',
      CancellationReasons: [
        { Code: 'None' },
        { Code: 'ConditionalCheckFailed', Item: { pk: { S: 'tx-c' }, n: { N: '5' } } },
      ],
    });
    expect(await item('tx-d')).toBeUndefined();
    expect((await item('tx-c'))?.n).toEqual({ N: '5' });
  });

  test('no other request sees a transaction half done', async () => {
    // Transactions move one unit from one item to the other while plain reads watch the sum.
    await client.send(
      new PutItemCommand({ TableName: tableName, Item: { pk: { S: 'tx-x' }, n: { N: '100' } } }),
    );
    await client.send(
      new PutItemCommand({ TableName: tableName, Item: { pk: { S: 'tx-y' }, n: { N: '0' } } }),
    );
    const move = () =>
      client.send(
        new TransactWriteItemsCommand({
          TransactItems: [
            {
              Update: {
                TableName: tableName,
                Key: { pk: { S: 'tx-x' } },
                UpdateExpression: 'SET n = n - :one',
                ExpressionAttributeValues: { ':one': { N: '1' } },
              },
            },
            {
              Update: {
                TableName: tableName,
                Key: { pk: { S: 'tx-y' } },
                UpdateExpression: 'SET n = n + :one',
                ExpressionAttributeValues: { ':one': { N: '1' } },
              },
            },
          ],
        }),
      );
    const sums: number[] = [];
    const watch = async () => {
      for (let read = 0; read < 20; read++) {
        const [x, y] = await Promise.all([item('tx-x'), item('tx-y')]);
        sums.push(Number(x?.n?.N) + Number(y?.n?.N));
      }
    };
    await Promise.all([...Array.from({ length: 20 }, move), watch(), watch()]);
    expect(Number((await item('tx-y'))?.n?.N)).toBe(20);
    // Two reads sent together may straddle a transaction (each read is atomic, the pair is not), so
    // what is checked is the end state and that no read ever saw a failed transaction's write.
    expect(sums.every((sum) => sum >= 99 && sum <= 101)).toBe(true);
  });
});

resourceOperationsTests({
  name: 'DynamoDBStore (dynalite)',
  createStore: () => new DynamoDBStore({ client, tableName }),
  describe,
  test,
  expect,
  // Ten racers, not twenty: each transaction runs alone in the fixture's layer, and twenty
  // completions racing on one item, each resent as the others change it, outlast the test's timeout
  // on a loaded machine. Ten still race every call against nine others.
  racers: 10,
});

describe('DynamoDBStore: the resource item', () => {
  test('a resource is kept in an item of its own, apart from every event key, with a TTL that covers its ends', async () => {
    const store = new DynamoDBStore({ client, tableName, keyPrefix: 'app:' });
    const resource = `user:item_${crypto.randomUUID()}`;
    const key = `${resource}\u001fevt_1`;
    expect(await store.claim(key, 'tok', 60_000)).toBe('claimed');
    expect((await store.claimResource(resource, 'tok', 60_000)).outcome).toBe('claimed');
    const leased = await item(`app:%r:${resource}`);
    expect(leased?.token).toEqual({ S: 'tok' });
    expect(Number(leased?.expiresAt?.N)).toBeGreaterThanOrEqual(
      Math.ceil(Number(leased?.leaseEndsAtMs?.N) / 1000),
    );
    expect(await store.completeOrdered(key, 'tok', 60_000, resource, 9, 3_600_000)).toBe('completed');
    const done = await item(`app:%r:${resource}`);
    expect(done?.token).toBeUndefined();
    expect(done?.leaseEndsAtMs).toBeUndefined();
    expect(done?.watermark).toEqual({ N: '9' });
    expect(Number(done?.expiresAt?.N)).toBe(Math.ceil(Number(done?.watermarkEndsAtMs?.N) / 1000));
    expect((await item(store.keyFor(key)))?.state).toEqual({ S: 'completed' });
  });

  test('a claim raises a TTL that would end before its lease (a watermark about to be forgotten)', async () => {
    const store = new DynamoDBStore({ client, tableName });
    const resource = `user:short_${crypto.randomUUID()}`;
    const key = `${resource}\u001fevt_1`;
    expect(await store.claim(key, 'a', 60_000)).toBe('claimed');
    expect((await store.claimResource(resource, 'a', 60_000)).outcome).toBe('claimed');
    // A watermark remembered for one second: the TTL then ends long before a minute's lease.
    expect(await store.completeOrdered(key, 'a', 60_000, resource, 1, 1_000)).toBe('completed');
    expect((await store.claimResource(resource, 'b', 600_000)).outcome).toBe('claimed');
    const leased = await item(`%r:${resource}`);
    expect(Number(leased?.expiresAt?.N)).toBeGreaterThanOrEqual(
      Math.ceil(Number(leased?.leaseEndsAtMs?.N) / 1000),
    );
    expect(await store.renewResource(resource, 'b', 1_200_000)).toBe('renewed');
    const renewed = await item(`%r:${resource}`);
    expect(Number(renewed?.expiresAt?.N)).toBeGreaterThanOrEqual(
      Math.ceil(Number(renewed?.leaseEndsAtMs?.N) / 1000),
    );
  });

  test('a guarded delivery sends three requests, stale or not: claim, claimResource, one transaction', async () => {
    const sent: string[] = [];
    const counting = {
      send: (command: { constructor: { name: string } }) => {
        sent.push(command.constructor.name);
        return client.send(command as never);
      },
    };
    const store = new DynamoDBStore({ client: counting as never, tableName });
    const resource = `user:trips_${crypto.randomUUID()}`;
    const deliver = async (event: string, position: number) => {
      sent.length = 0;
      const token = crypto.randomUUID();
      const key = `${resource}\u001f${event}`;
      expect(await store.claim(key, token, 60_000)).toBe('claimed');
      expect((await store.claimResource(resource, token, 60_000)).outcome).toBe('claimed');
      expect(await store.completeOrdered(key, token, 60_000, resource, position, 3_600_000)).toBe(
        'completed',
      );
      return [...sent];
    };
    const requests = ['PutItemCommand', 'UpdateItemCommand', 'TransactWriteItemsCommand'];
    expect(await deliver('evt_new', 20)).toEqual(requests);
    // Older than the watermark (a stale event recorded as done): the hint from the claim picks the
    // version of the update that keeps the watermark, so it is still one transaction.
    expect(await deliver('evt_old', 10)).toEqual(requests);
    expect(await deliver('evt_newer', 30)).toEqual(requests);
    expect(await store.claimResource(resource, 'reader', 60_000)).toEqual({
      outcome: 'claimed',
      watermark: 30,
    });
  });
});
