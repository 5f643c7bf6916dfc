/**
 * Two processes, each with its own DynamoDBClient, DynamoDBStore and `createWebhooks` receiver, on one
 * dynalite (an implementation of the DynamoDB API that runs on this machine, not AWS): each delivers 100
 * copies of the same event at the same moment, and the handler runs once in total.
 */
import type { ChildProcess } from 'node:child_process';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStore } from 'service-webhooks/dynamodb';
import { createTestEvent } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ROOT } from '../../support/paths.js';
import { spawnProcess } from '../../support/process.js';
import { clientFor, type RunningDynalite, startDynalite, uniqueTableName } from './dynalite.js';

const SCRIPT = fileURLToPath(new URL('./fixtures/deliverer.ts', import.meta.url));
const SECRET = 'whsec_dynamodb_multi_process';
const COPIES_PER_PROCESS = 100;
/**
 * dynalite answers concurrent writes to one item one after another (a lock around a LevelDB read and
 * write, in JavaScript), so the last of 200 racing claims waits seconds, where DynamoDB takes
 * milliseconds. The store deadline is raised so that every copy gets its real answer (200 or 409)
 * rather than 503; the proof, one handler run, does not depend on it.
 */
const STORE_TIMEOUT_MS = 15_000;

interface Result {
  readonly id: string;
  readonly runs: number;
  readonly answers: readonly string[];
}

interface Deliverer {
  readonly child: ChildProcess;
  readonly lines: Interface;
  next(): Promise<Record<string, unknown>>;
}

function startDeliverer(env: Record<string, string>): Deliverer {
  const deliverer = spawnProcess(process.execPath, ['--import', 'tsx', SCRIPT], {
    name: 'deliverer',
    cwd: ROOT,
    env: { ...env, NODE_NO_WARNINGS: '1' },
    stdin: 'pipe',
  });
  const { child } = deliverer;
  const lines = createInterface({ input: child.stdout! });
  const queue: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  lines.on('line', (line) => {
    const waiter = waiting.shift();
    if (waiter) waiter(line);
    else queue.push(line);
  });
  const exited = deliverer.exited.then((code): never => {
    throw new Error(`deliverer exited (${code}): ${deliverer.stderr()}`);
  });
  exited.catch(() => {});
  return {
    child,
    lines,
    next: () =>
      Promise.race([
        new Promise<Record<string, unknown>>((resolve) => {
          const line = queue.shift();
          if (line !== undefined) resolve(JSON.parse(line));
          else waiting.push((next) => resolve(JSON.parse(next)));
        }),
        exited,
      ]),
  };
}

describe('two processes on one DynamoDB table (dynalite)', () => {
  const tableName = uniqueTableName('multi');
  let server: RunningDynalite;
  let client: DynamoDBClient;
  let deliverers: Deliverer[] = [];

  beforeAll(async () => {
    server = await startDynalite();
    client = clientFor(server.endpoint);
    await new DynamoDBStore({ client, tableName }).createTable({ timeToLive: false });
    const env = {
      SECRET,
      TABLE: tableName,
      DYNAMODB_ENDPOINT: server.endpoint,
      COPIES: String(COPIES_PER_PROCESS),
      STORE_TIMEOUT_MS: String(STORE_TIMEOUT_MS),
    };
    deliverers = [startDeliverer(env), startDeliverer(env)];
    for (const deliverer of deliverers) expect(await deliverer.next()).toEqual({ ready: true });
  });

  afterAll(async () => {
    for (const { child } of deliverers) {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.stdin?.end();
        await exited;
      }
    }
    client?.destroy();
    await server?.stop();
  });

  test('200 concurrent copies of one event, 100 from each process: the handler runs once in total', async () => {
    for (let round = 0; round < 3; round++) {
      const event = createTestEvent('payment.succeeded');
      const started = performance.now();
      // One write per process, back to back: both start delivering at the same moment.
      for (const { child } of deliverers) child.stdin!.write(`${JSON.stringify(event)}\n`);
      const results = (await Promise.all(deliverers.map((d) => d.next()))) as unknown as Result[];
      const tookMs = Math.round(performance.now() - started);

      const answers = results.flatMap((result) => result.answers);
      const count = (answer: string) => answers.filter((a) => a === answer).length;
      expect(results.map((result) => result.id)).toEqual([event.id, event.id]);
      expect(results.reduce((sum, result) => sum + result.runs, 0)).toBe(1);
      expect(answers).toHaveLength(2 * COPIES_PER_PROCESS);
      expect(count('handled')).toBe(1);
      expect(count('handled') + count('duplicate') + count('event_in_progress')).toBe(200);
      console.log(
        `[dynalite] round ${round + 1}: 200 copies over 2 processes in ${tookMs} ms: handler runs ${results.map((r) => r.runs).join(' + ')} = 1; ${count('duplicate')} duplicate (200), ${count('event_in_progress')} in progress (409)`,
      );
    }
  }, 120_000);
});
