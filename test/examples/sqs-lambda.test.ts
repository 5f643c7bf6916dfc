/**
 * examples/sqs-lambda on the built package: local.ts runs the deployment of template.yaml against
 * fauxqs (SQS) and dynalite (DynamoDB), invoking door.ts with Function URL events and worker.ts with
 * SQSEvent batches built from received messages, as the event source mapping would. And the template's
 * wiring: what the engine's documentation asks of the queue, the mapping and the table.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { DYNAMODB_STORE_ATTRIBUTES } from 'service-webhooks/dynamodb';
import { beforeAll, describe, expect, test } from 'vitest';
import { parse } from 'yaml';
import { assertBuilt, ROOT, repoPath } from '../support/paths.js';
import { BUILT_ENV } from './run-example.js';

const run = promisify(execFile);
const TEMPLATE = repoPath('examples/sqs-lambda/template.yaml');

describe('examples/sqs-lambda: local run on fauxqs and dynalite (built package)', () => {
  let stdout = '';
  let stderr = '';
  let result: {
    door: { eventId: string; status: number; duplicate: boolean }[];
    batches: number;
    deadLetters: { eventId: string; attempts: number }[];
  };

  beforeAll(async () => {
    assertBuilt('index.js', 'sqs.js', 'dynamodb.js', 'lambda.js', 'testing.js');
    ({ stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'examples/sqs-lambda/local.ts'], {
      cwd: ROOT,
      // Two attempts a second apart, as local.ts defaults to, said here so the test does not depend on it.
      env: { ...process.env, ...BUILT_ENV, WORKER_ATTEMPTS: '2', RETRY_DELAYS_MS: '1000' },
      timeout: 120_000,
    }));
    const line = stdout.split('\n').find((text) => text.startsWith('result '));
    if (!line) throw new Error(`local.ts printed no result line.\nstdout:\n${stdout}\nstderr:\n${stderr}`);
    result = JSON.parse(line.slice('result '.length));
  }, 150_000);

  test('the door answers 200 for a new event, and a repeated delivery as a duplicate, before and after the worker ran', () => {
    const [first, retry, failing, late] = result.door;
    expect(first).toMatchObject({ status: 200, duplicate: false });
    expect(retry).toEqual({ eventId: first!.eventId, status: 200, duplicate: true });
    expect(failing).toMatchObject({ status: 200, duplicate: false });
    expect(late).toEqual({ eventId: first!.eventId, status: 200, duplicate: true });
    expect(stdout).toContain(
      `door: 200 {"received":true,"duplicate":true} for ${first!.eventId} (duplicate)`,
    );
  });

  test('the worker ran the handler once for the event delivered twice', () => {
    const runs = stdout.split('\n').filter((text) => text.startsWith('user.created ada@example.com'));
    expect(runs).toEqual(['user.created ada@example.com (attempt 1)']);
  });

  test('a failing event is retried through a new message, then dead-lettered with its cause', () => {
    const failing = result.door[2]!.eventId;
    const logged = stderr
      .split('\n')
      .filter((text) => text.startsWith('{'))
      .map((text) => JSON.parse(text) as { message: string; eventId: string; attempt: number });
    expect(logged.filter((record) => record.eventId === failing)).toEqual([
      expect.objectContaining({ message: 'webhook inbox: attempt failed; retrying', attempt: 1 }),
      expect.objectContaining({ message: 'webhook inbox: event dead-lettered', attempt: 2 }),
    ]);
    // The retry is a delayed copy the mapping received in a later batch.
    expect(result.batches).toBeGreaterThanOrEqual(2);
    expect(result.deadLetters).toEqual([{ eventId: failing, attempts: 2 }]);
    expect(stdout).toContain(
      `dead letter: ${failing} after 2 attempts: handler_failed: cannot welcome grace@fail.invalid`,
    );
  });
});

/** `!GetAtt Resource.Attribute` as the template's parser reads it. */
const getAtt = (path: string) => ({
  'Fn::GetAtt': [path.slice(0, path.indexOf('.')), path.slice(path.indexOf('.') + 1)],
});

describe('examples/sqs-lambda/template.yaml', () => {
  const source = readFileSync(TEMPLATE, 'utf8');
  // biome-ignore lint/suspicious/noExplicitAny: a parsed template, read by property names.
  let template: any;

  beforeAll(() => {
    // SAM's short-form intrinsics, read as CloudFormation reads them, so the wiring is checked as data.
    template = parse(source, {
      customTags: [
        { tag: '!Ref', resolve: (value: string) => ({ Ref: value }) },
        {
          tag: '!GetAtt',
          resolve: (value: string) => ({
            'Fn::GetAtt': [value.slice(0, value.indexOf('.')), value.slice(value.indexOf('.') + 1)],
          }),
        },
      ],
    });
  });

  test('is a SAM template whose functions run on Node.js 22 from handlers that exist, built by esbuild', () => {
    expect(template.Transform).toBe('AWS::Serverless-2016-10-31');
    expect(template.Globals.Function.Runtime).toBe('nodejs22.x');
    for (const [name, file] of [
      ['DoorFunction', 'door'],
      ['WorkerFunction', 'worker'],
    ] as const) {
      const fn = template.Resources[name];
      expect(fn.Type).toBe('AWS::Serverless::Function');
      expect(fn.Properties.Handler).toBe(`${file}.handler`);
      expect(fn.Metadata.BuildMethod).toBe('esbuild');
      expect(fn.Metadata.BuildProperties.EntryPoints).toEqual([`${file}.ts`]);
      const entry = repoPath('examples/sqs-lambda', fn.Properties.CodeUri, `${file}.ts`);
      expect(existsSync(entry)).toBe(true);
      expect(readFileSync(entry, 'utf8')).toMatch(/^export const handler = /m);
    }
  });

  test('the door is a public Function URL: the signature is the authentication', () => {
    expect(template.Resources.DoorFunction.Properties.FunctionUrlConfig).toEqual({ AuthType: 'NONE' });
    expect(template.Parameters.WebhookSecret).toMatchObject({ Type: 'String', NoEcho: true });
    expect(template.Globals.Function.Environment.Variables.WEBHOOK_SECRET).toEqual({ Ref: 'WebhookSecret' });
  });

  test('the mapping reads the inbox queue with partial batch responses', () => {
    const worker = template.Resources.WorkerFunction.Properties;
    const events = Object.values(worker.Events) as { Type: string; Properties: Record<string, unknown> }[];
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      Type: 'SQS',
      Properties: { Queue: getAtt('InboxQueue.Arn'), FunctionResponseTypes: ['ReportBatchItemFailures'] },
    });
  });

  test('the queue redrives to the dead-letter queue at 20 receives, with a visibility six times the worker timeout', () => {
    const queue = template.Resources.InboxQueue;
    expect(queue.Type).toBe('AWS::SQS::Queue');
    expect(queue.Properties.RedrivePolicy).toEqual({
      deadLetterTargetArn: getAtt('InboxDeadLetterQueue.Arn'),
      maxReceiveCount: 20,
    });
    expect(template.Resources.InboxDeadLetterQueue.Type).toBe('AWS::SQS::Queue');
    expect(queue.Properties.VisibilityTimeout).toBe(6 * template.Resources.WorkerFunction.Properties.Timeout);
  });

  test('the functions get the permissions the door and the worker use, and the table is the store’s', () => {
    const door = template.Resources.DoorFunction.Properties.Policies;
    expect(door).toContainEqual({ SQSSendMessagePolicy: { QueueName: getAtt('InboxQueue.QueueName') } });
    expect(door).toContainEqual({ DynamoDBCrudPolicy: { TableName: { Ref: 'WebhookEvents' } } });
    const worker = template.Resources.WorkerFunction.Properties.Policies;
    expect(worker).toContainEqual({ SQSPollerPolicy: { QueueName: getAtt('InboxQueue.QueueName') } });
    expect(worker).toContainEqual({ DynamoDBCrudPolicy: { TableName: { Ref: 'WebhookEvents' } } });
    expect(worker).toContainEqual({
      Statement: [
        {
          Effect: 'Allow',
          Action: ['sqs:SendMessage', 'sqs:ChangeMessageVisibility', 'sqs:DeleteMessage'],
          Resource: [getAtt('InboxQueue.Arn'), getAtt('InboxDeadLetterQueue.Arn')],
        },
      ],
    });
    const table = template.Resources.WebhookEvents.Properties;
    const { partitionKey, timeToLive } = DYNAMODB_STORE_ATTRIBUTES;
    expect(table.KeySchema).toEqual([{ AttributeName: partitionKey, KeyType: 'HASH' }]);
    expect(table.AttributeDefinitions).toEqual([{ AttributeName: partitionKey, AttributeType: 'S' }]);
    expect(table.TimeToLiveSpecification).toEqual({ AttributeName: timeToLive, Enabled: true });
    const env = template.Globals.Function.Environment.Variables;
    expect(env).toMatchObject({
      WEBHOOK_TABLE: { Ref: 'WebhookEvents' },
      INBOX_QUEUE_URL: { Ref: 'InboxQueue' },
      DEAD_LETTER_QUEUE_URL: { Ref: 'InboxDeadLetterQueue' },
    });
  });
});
