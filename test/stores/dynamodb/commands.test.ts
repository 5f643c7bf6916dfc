/**
 * What DynamoDBStore sends, checked against a recording client (no DynamoDB at all): the conditional
 * writes and their expressions, the one-call claim where DynamoDB returns the item that failed the
 * condition (`ReturnValuesOnConditionCheckFailure: 'ALL_OLD'`, which dynalite, the DynamoDB
 * implementation the other tests run against, ignores), the table helper's TTL half (dynalite has no
 * UpdateTimeToLive), and SDK errors becoming StoreUnavailableError.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ConfigurationError, StoreUnavailableError } from 'service-webhooks';
import { DynamoDBStore } from 'service-webhooks/dynamodb';
import { describe, expect, test } from 'vitest';

interface Sent {
  readonly name: string;
  readonly input: Record<string, unknown>;
}

/** A client whose `send` records each command and answers with `reply`. */
function recordingClient(reply: (command: Sent) => unknown = () => ({})) {
  const sent: Sent[] = [];
  const client = {
    async send(command: { constructor: { name: string }; input: Record<string, unknown> }) {
      const record = { name: command.constructor.name, input: command.input };
      sent.push(record);
      const answer = reply(record);
      if (answer instanceof Error) throw answer;
      return answer;
    },
  };
  return { sent, client: client as unknown as DynamoDBClient };
}

function sdkError(name: string, fields: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(`${name} from the service`), { name, ...fields });
}

const conditionFailed = (item?: Record<string, unknown>) =>
  sdkError('ConditionalCheckFailedException', item ? { Item: item } : {});

describe('DynamoDBStore commands', () => {
  test('claim: one PutItem, conditional on an absent or ended record, asking for the old item on failure', async () => {
    const { sent, client } = recordingClient();
    const store = new DynamoDBStore({ client, tableName: 'webhook-events', keyPrefix: 'p:' });
    const before = Date.now();
    expect(await store.claim('evt_1', 'tok', 45_000.2)).toBe('claimed');
    expect(sent).toHaveLength(1);
    const [{ name, input }] = sent as [Sent];
    expect(name).toBe('PutItemCommand');
    expect(input).toMatchObject({
      TableName: 'webhook-events',
      ConditionExpression: 'attribute_not_exists(#k) OR #e <= :now',
      ExpressionAttributeNames: { '#k': 'pk', '#e': 'expiresAtMs' },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      Item: { pk: { S: 'p:evt_1' }, state: { S: 'in_progress' }, token: { S: 'tok' } },
    });
    const now = Number((input.ExpressionAttributeValues as { ':now': { N: string } })[':now'].N);
    expect(now).toBeGreaterThanOrEqual(before);
    const item = input.Item as Record<string, { N: string }>;
    // A fractional lease is rounded up, never shortened.
    expect(Number(item.expiresAtMs!.N)).toBe(now + 45_001);
    expect(Number(item.expiresAt!.N)).toBe(Math.ceil((now + 45_001) / 1000));
  });

  test('claim learns in_progress or completed from the failed condition itself: no second call', async () => {
    for (const [state, expected] of [
      ['completed', 'completed'],
      ['in_progress', 'in_progress'],
    ] as const) {
      const { sent, client } = recordingClient(() => conditionFailed({ state: { S: state } }));
      const store = new DynamoDBStore({ client, tableName: 'webhook-events' });
      expect(await store.claim('evt_1', 'tok', 1_000)).toBe(expected);
      expect(sent.map((command) => command.name)).toEqual(['PutItemCommand']);
    }
  });

  test('claim falls back to one consistent GetItem where the failed condition carries no item', async () => {
    const { sent, client } = recordingClient((command) =>
      command.name === 'PutItemCommand' ? conditionFailed() : { Item: { state: { S: 'completed' } } },
    );
    const store = new DynamoDBStore({ client, tableName: 'webhook-events' });
    expect(await store.claim('evt_1', 'tok', 1_000)).toBe('completed');
    expect(sent.map((command) => command.name)).toEqual(['PutItemCommand', 'GetItemCommand']);
    expect(sent[1]!.input).toMatchObject({ ConsistentRead: true, Key: { pk: { S: 'evt_1' } } });
  });

  test('complete and renew: PutItem conditional on the holder token, or no live record; lost on failure', async () => {
    const holder = 'attribute_not_exists(#k) OR #e <= :now OR (#s = :held AND #t = :token)';
    const { sent, client } = recordingClient();
    const store = new DynamoDBStore({ client, tableName: 'webhook-events' });
    expect(await store.complete('evt_1', 'tok', 86_400_000)).toBe('completed');
    expect(await store.renew('evt_1', 'tok', 45_000)).toBe('renewed');
    const [complete, renew] = sent as [Sent, Sent];
    expect(complete.input).toMatchObject({
      ConditionExpression: holder,
      ExpressionAttributeValues: { ':held': { S: 'in_progress' }, ':token': { S: 'tok' } },
      Item: { pk: { S: 'evt_1' }, state: { S: 'completed' } },
    });
    expect(complete.input.Item).not.toHaveProperty('token');
    expect(renew.input).toMatchObject({
      ConditionExpression: holder,
      Item: { state: { S: 'in_progress' }, token: { S: 'tok' } },
    });

    const refused = recordingClient(() => conditionFailed());
    const fenced = new DynamoDBStore({ client: refused.client, tableName: 'webhook-events' });
    expect(await fenced.complete('evt_1', 'tok', 1_000)).toBe('lost');
    expect(await fenced.renew('evt_1', 'tok', 1_000)).toBe('lost');
    await expect(fenced.release('evt_1', 'tok')).resolves.toBeUndefined();
    expect(refused.sent.map((command) => command.name)).toEqual([
      'PutItemCommand',
      'PutItemCommand',
      'DeleteItemCommand',
    ]);
  });

  test('release: DeleteItem conditional on the holder token', async () => {
    const { sent, client } = recordingClient();
    await new DynamoDBStore({ client, tableName: 'webhook-events' }).release('evt_1', 'tok');
    expect(sent[0]).toEqual({
      name: 'DeleteItemCommand',
      input: {
        TableName: 'webhook-events',
        Key: { pk: { S: 'evt_1' } },
        ConditionExpression: '#s = :held AND #t = :token',
        ExpressionAttributeNames: { '#s': 'state', '#t': 'token' },
        ExpressionAttributeValues: { ':held': { S: 'in_progress' }, ':token': { S: 'tok' } },
      },
    });
  });

  test('every other SDK error is a StoreUnavailableError carrying it as cause', async () => {
    const throttled = sdkError('ProvisionedThroughputExceededException');
    const { client } = recordingClient(() => throttled);
    const store = new DynamoDBStore({ client, tableName: 'webhook-events' });
    for (const call of [
      () => store.claim('evt_1', 'tok', 1_000),
      () => store.complete('evt_1', 'tok', 1_000),
      () => store.renew('evt_1', 'tok', 1_000),
      () => store.release('evt_1', 'tok'),
    ]) {
      const error = await call().then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(error).toMatchObject({ code: 'store_unavailable', cause: throttled });
    }
  });
});

describe('DynamoDBStore.createTable', () => {
  const tableStatus = (statuses: string[]) => {
    let describes = 0;
    return (command: Sent, ttl: Record<string, string> = { TimeToLiveStatus: 'DISABLED' }) => {
      if (command.name === 'DescribeTableCommand') {
        return { Table: { TableStatus: statuses[Math.min(describes++, statuses.length - 1)] } };
      }
      if (command.name === 'DescribeTimeToLiveCommand') return { TimeToLiveDescription: ttl };
      return {};
    };
  };

  test('creates an on-demand table keyed by pk (S), waits until ACTIVE, turns TTL on for expiresAt', async () => {
    const answer = tableStatus(['CREATING', 'ACTIVE']);
    const { sent, client } = recordingClient((command) => answer(command));
    await new DynamoDBStore({ client, tableName: 'webhook-events' }).createTable();
    expect(sent.map((command) => command.name)).toEqual([
      'CreateTableCommand',
      'DescribeTableCommand',
      'DescribeTableCommand',
      'DescribeTimeToLiveCommand',
      'UpdateTimeToLiveCommand',
    ]);
    expect(sent[0]!.input).toEqual({
      TableName: 'webhook-events',
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    });
    expect(sent[4]!.input).toEqual({
      TableName: 'webhook-events',
      TimeToLiveSpecification: { Enabled: true, AttributeName: 'expiresAt' },
    });
  });

  test('an existing table with TTL already on expiresAt is left as it is', async () => {
    const answer = tableStatus(['ACTIVE']);
    const { sent, client } = recordingClient((command) =>
      command.name === 'CreateTableCommand'
        ? sdkError('ResourceInUseException')
        : answer(command, { TimeToLiveStatus: 'ENABLED', AttributeName: 'expiresAt' }),
    );
    await new DynamoDBStore({ client, tableName: 'webhook-events' }).createTable();
    expect(sent.map((command) => command.name)).toEqual([
      'CreateTableCommand',
      'DescribeTableCommand',
      'DescribeTimeToLiveCommand',
    ]);
  });

  test('an endpoint without UpdateTimeToLive (dynalite) is a ConfigurationError saying to pass timeToLive: false', async () => {
    const answer = tableStatus(['ACTIVE']);
    const unknown = sdkError('UnknownOperationException');
    const { sent, client } = recordingClient((command) =>
      command.name === 'UpdateTimeToLiveCommand' ? unknown : answer(command),
    );
    const error = await new DynamoDBStore({ client, tableName: 'webhook-events' })
      .createTable()
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect(error).toMatchObject({ code: 'invalid_configuration', cause: unknown });
    expect((error as Error).message).toMatch(
      /does not implement UpdateTimeToLive.*createTable\(\{ timeToLive: false \}\)/,
    );
    expect(sent.map((command) => command.name)).toEqual([
      'CreateTableCommand',
      'DescribeTableCommand',
      'DescribeTimeToLiveCommand',
      'UpdateTimeToLiveCommand',
    ]);
  });

  test('other UpdateTimeToLive failures are thrown as they are', async () => {
    const answer = tableStatus(['ACTIVE']);
    const denied = sdkError('AccessDeniedException');
    const { client } = recordingClient((command) =>
      command.name === 'UpdateTimeToLiveCommand' ? denied : answer(command),
    );
    await expect(new DynamoDBStore({ client, tableName: 'webhook-events' }).createTable()).rejects.toBe(
      denied,
    );
  });

  test('TTL on another attribute is an error that names both attributes', async () => {
    const answer = tableStatus(['ACTIVE']);
    const { client } = recordingClient((command) =>
      answer(command, { TimeToLiveStatus: 'ENABLED', AttributeName: 'ttl' }),
    );
    await expect(new DynamoDBStore({ client, tableName: 'webhook-events' }).createTable()).rejects.toThrow(
      /Time to Live on "ttl"; the store needs it on "expiresAt"/,
    );
  });
});
