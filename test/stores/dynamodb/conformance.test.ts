/**
 * DynamoDBStore against dynalite (see ./dynalite.ts: an implementation of the DynamoDB API that runs on
 * this machine, not AWS): the shared store conformance suite with renewals, and what the suite cannot
 * see from outside (the item layout, the TTL attribute, the table helper, configuration errors).
 */
import { type AttributeValue, type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { ConfigurationError } from 'service-webhooks';
import { DYNAMODB_STORE_ATTRIBUTES, DynamoDBStore } from 'service-webhooks/dynamodb';
import { storeConformanceSuite } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { clientFor, type RunningDynalite, startDynalite, uniqueTableName } from './dynalite.js';

const tableName = uniqueTableName('conformance');
/**
 * dynalite runs each write to one item under a lock around a LevelDB read and write, in JavaScript, so
 * 100 concurrent claims of one event are answered one after another (~1.3 s for the last on this
 * shared 2-core machine; DynamoDB answers conditional writes in milliseconds). It also ignores
 * ReturnValuesOnConditionCheckFailure, so each lost claim costs it a second request (a consistent
 * GetItem). The suite's per-call deadline is raised for this emulator from its default 1 s; what it
 * checks (exactly one claim wins, the rest answer in_progress) is unchanged. faults.test.ts measures
 * the docs' fail-fast client against storeTimeoutMs.
 */
const CALL_DEADLINE_MS = 5_000;
const PATIENT = {
  maxAttempts: 1,
  requestHandler: {
    requestTimeout: CALL_DEADLINE_MS,
    throwOnRequestTimeout: true,
    httpAgent: { maxSockets: 200 },
  },
};
let server: RunningDynalite;
let client: DynamoDBClient;

beforeAll(async () => {
  server = await startDynalite();
  client = clientFor(server.endpoint, PATIENT);
  // dynalite has no UpdateTimeToLive (DynamoDB's TTL deletes lazily and correctness never relies on
  // it); test/stores/dynamodb/commands.test.ts checks the TTL half of createTable against a recording client.
  await new DynamoDBStore({ client, tableName }).createTable({ timeToLive: false });
});

afterAll(async () => {
  client?.destroy();
  await server?.stop();
});

// One test at a time, unlike the Redis and PostgreSQL suites: dynalite answers the writes above one
// after another, and with the tests side by side 20 of them passed their 5 s call deadline on a
// loaded machine.
storeConformanceSuite({
  name: 'DynamoDBStore (dynalite)',
  createStore: () => new DynamoDBStore({ client, tableName }),
  describe,
  test,
  renews: true,
  ordering: true,
  callDeadlineMs: CALL_DEADLINE_MS,
});

async function rawItem(
  store: DynamoDBStore,
  key: string,
): Promise<Record<string, AttributeValue> | undefined> {
  const { Item } = await client.send(
    new GetItemCommand({ TableName: tableName, Key: { pk: { S: store.keyFor(key) } }, ConsistentRead: true }),
  );
  return Item;
}

describe('DynamoDBStore (dynalite) beyond the suite', () => {
  test('one item per key: state, token, expiresAtMs, and expiresAt in epoch seconds for TTL', async () => {
    const store = new DynamoDBStore({ client, tableName });
    const key = `layout-${crypto.randomUUID()}`;
    const token = crypto.randomUUID();
    const before = Date.now();
    expect(await store.claim(key, token, 45_000)).toBe('claimed');
    const held = await rawItem(store, key);
    expect(Object.keys(held ?? {}).sort()).toEqual(['expiresAt', 'expiresAtMs', 'pk', 'state', 'token']);
    expect(held?.state).toEqual({ S: 'in_progress' });
    expect(held?.token).toEqual({ S: token });
    const leaseEnd = Number(held?.expiresAtMs?.N);
    expect(leaseEnd).toBeGreaterThanOrEqual(before + 45_000);
    expect(leaseEnd).toBeLessThanOrEqual(Date.now() + 45_000);
    expect(Number(held?.[DYNAMODB_STORE_ATTRIBUTES.timeToLive]?.N)).toBe(Math.ceil(leaseEnd / 1000));

    expect(await store.complete(key, token, 86_400_000)).toBe('completed');
    const done = await rawItem(store, key);
    expect(Object.keys(done ?? {}).sort()).toEqual(['expiresAt', 'expiresAtMs', 'pk', 'state']);
    expect(done?.state).toEqual({ S: 'completed' });
    const memoryEnd = Number(done?.expiresAtMs?.N);
    expect(memoryEnd).toBeGreaterThanOrEqual(before + 86_400_000);
    expect(Number(done?.expiresAt?.N)).toBe(Math.ceil(memoryEnd / 1000));
  });

  test('release deletes the item; keyPrefix separates stores sharing a table', async () => {
    const plain = new DynamoDBStore({ client, tableName });
    const billing = new DynamoDBStore({ client, tableName, keyPrefix: 'billing:' });
    const key = `prefix-${crypto.randomUUID()}`;
    const token = crypto.randomUUID();
    expect(billing.keyFor(key)).toBe(`billing:${key}`);
    expect(await billing.claim(key, token, 60_000)).toBe('claimed');
    expect(await plain.claim(key, crypto.randomUUID(), 60_000)).toBe('claimed');
    await billing.release(key, token);
    expect(await rawItem(billing, key)).toBeUndefined();
    expect(await rawItem(plain, key)).toBeDefined();
  });

  test('unpaired surrogates and % stay distinct keys (UTF-8 cannot hold unpaired surrogates)', async () => {
    const store = new DynamoDBStore({ client, tableName });
    const base = `surrogates-${crypto.randomUUID()}`;
    const keys = [`${base}\uD800`, `${base}\uDC00`, `${base}\uFFFD`, `${base}%uD800`, `${base}%`];
    expect(new Set(keys.map((key) => store.keyFor(key))).size).toBe(keys.length);
    const results = await Promise.all(keys.map((key) => store.claim(key, crypto.randomUUID(), 60_000)));
    expect(results).toEqual(keys.map(() => 'claimed'));
  });

  test('createTable is idempotent on an existing table', async () => {
    await expect(
      new DynamoDBStore({ client, tableName }).createTable({ timeToLive: false }),
    ).resolves.toBeUndefined();
  });

  test('a missing table is a StoreUnavailableError that names the table', async () => {
    const store = new DynamoDBStore({ client, tableName: 'no-such-table' });
    await expect(store.claim('k', 't', 1_000)).rejects.toMatchObject({
      code: 'store_unavailable',
      message: expect.stringContaining('no-such-table exist'),
      cause: expect.objectContaining({ name: 'ResourceNotFoundException' }),
    });
  });

  test('refuses a missing client, a bad table name or an oversized keyPrefix at construction', () => {
    expect(() => new DynamoDBStore({ client: {} as DynamoDBClient, tableName })).toThrow(ConfigurationError);
    expect(() => new DynamoDBStore({ client, tableName: 'x' })).toThrow(ConfigurationError);
    expect(() => new DynamoDBStore({ client, tableName: 'events; drop' })).toThrow(ConfigurationError);
    expect(() => new DynamoDBStore({ client, tableName, keyPrefix: 'é'.repeat(65) })).toThrow(
      ConfigurationError,
    );
    expect(
      () =>
        new DynamoDBStore({
          client,
          tableName: 'arn:aws:dynamodb:eu-west-1:123456789012:table/webhook-events',
        }),
    ).not.toThrow();
  });
});
