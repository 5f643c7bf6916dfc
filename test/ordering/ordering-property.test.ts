/**
 * The ordering guard's property, on every built-in store against its real server: random
 * permutations, duplicates and concurrency of each resource's events (./support/ordering-scenario.ts)
 * delivered through real receivers with `ordering` (`user.*` latest, `project.*` serialize) end, in
 * every run, with the newest event's state applied (latest), no two handler runs of one resource
 * overlapping (both modes), no stale handler run (latest), each event run exactly once (serialize)
 * and at most once (latest).
 *
 * MemoryStore: three receivers on one store in this process, six workers. Redis, PostgreSQL and
 * DynamoDB (dynalite, on this machine): two worker processes, each with its own client and receiver,
 * three workers each, the handlers logging to a Redis of this test's own. And the property must
 * catch a broken store: each of the watermark zoo's broken stores (test/testing/watermark-zoo.ts) fails
 * it, in this process, while the zoo's store without a flaw and MemoryStore keep it.
 *
 * Scale: RUNS scenarios per store (each one to three resources of two to six events, each sent one
 * to three times: up to 54 deliveries); a broken guard shows within a few (the zoo checks below fail
 * within their runs), and more runs only add wall time on the shared CI machine.
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { IdempotencyStore } from 'service-webhooks';
import { MemoryStore } from 'service-webhooks';
import { DynamoDBStore } from 'service-webhooks/dynamodb';
import { PostgresStore } from 'service-webhooks/postgres';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { clientFor, startDynalite, uniqueTableName } from '../stores/dynamodb/dynalite.js';
import { ROOT, repoPath } from '../support/paths.js';
import { type SpawnedProcess, spawnProcess } from '../support/process.js';
import { type StandaloneRedis, startStandalone } from '../support/redis-servers.js';
import { WATERMARK_FLAWS, WatermarkZooStore } from '../testing/watermark-zoo.js';
import { LocalHandlerLog, RedisHandlerLog } from './support/handler-log.js';
import { deliverQueue, noAnswers, orderedReceiver } from './support/ordered-receiver.js';
import { newestOf, type Scenario, scenarios, violations } from './support/ordering-scenario.js';

/**
 * Scenarios per store: the in-process MemoryStore is cheap; dynalite answers one item's writes one
 * after another, and each transaction alone (see its fixture), so it gets fewer.
 */
const RUNS = { memory: 40, redis: 20, postgres: 20, dynamodb: 8 } as const;
const WORKER = repoPath('test', 'ordering', 'fixtures', 'ordering-worker.ts');
const PROCESSES = 2;
const WORKERS_PER_PROCESS = 3;

/**
 * Three receivers on `store` in this process (they warn, once each, that they share a store and a
 * secret: they stand for one registration's processes), and a way to run a scenario through them
 * that answers the violations found. Each scenario's resources are its own, so one log serves all.
 */
function inProcess(store: IdempotencyStore, late?: ShiftedClock): (scenario: Scenario) => Promise<string[]> {
  const log = new LocalHandlerLog();
  const receivers = [0, 1, 2].map(() => orderedReceiver({ store, log }));
  return async (scenario) => {
    const answers = noAnswers();
    await Promise.all(
      scenario.queues.map((queue, index) =>
        deliverQueue(receivers[index % receivers.length]!, queue, answers),
      ),
    );
    if (late !== undefined) {
      // Once the ids are forgotten (the store's clock moved past dedupTtlSeconds), every older event
      // of a `latest` resource comes again, as a late replay does: its resource's watermark, which
      // outlives the ids by the 300 s a `created` may be ahead, must still make it stale.
      late.skip(DEDUP_TTL_MS + 1_000);
      const older = scenario.histories
        .filter((history) => history.mode === 'latest')
        .flatMap((history) => history.events.filter((event) => event !== newestOf(history)));
      await deliverQueue(receivers[0]!, older, answers);
    }
    return violations(scenario, await log.read(scenario));
  };
}

/** The receivers' default `dedupTtlSeconds`, in ms. */
const DEDUP_TTL_MS = 86_400_000;

/**
 * A store clock that can be moved ahead (the receivers keep the real one, so events stay within
 * their age): how a test sees what a store remembers a day later without waiting a day.
 */
class ShiftedClock {
  #offset = 0;
  readonly now = () => performance.now() + this.#offset;
  skip(ms: number): void {
    this.#offset += ms;
  }
}

describe('the property fails against each broken watermark store of the zoo', () => {
  // Each flaw shows within a few scenarios; a run stops at its first failure.
  const ZOO_RUNS = 25;
  const withLatest = scenarios(6).filter((scenario) => scenario.histories.some((h) => h.mode === 'latest'));
  for (const flaw of WATERMARK_FLAWS) {
    test(`fails on a store whose ${flaw}`, async () => {
      // A watermark that expires too early (with the ids' TTL) shows only once older events come again
      // after the ids were forgotten.
      const clock = new ShiftedClock();
      const late = flaw === 'watermark expires too early' ? clock : undefined;
      const run = inProcess(new WatermarkZooStore({ flaw, now: clock.now }), late);
      const result = await fc.check(
        fc.asyncProperty(withLatest, async (scenario) => {
          expect(await run(scenario)).toEqual([]);
        }),
        { numRuns: ZOO_RUNS, endOnFailure: true },
      );
      expect(result.failed).toBe(true);
    }, 60_000);
  }

  test('and holds on the zoo store without a flaw, and on MemoryStore, with the late copies too', async () => {
    for (const make of [
      (clock: ShiftedClock) => new WatermarkZooStore({ now: clock.now }),
      (clock: ShiftedClock) => new MemoryStore({ now: clock.now }),
    ]) {
      const clock = new ShiftedClock();
      const run = inProcess(make(clock), clock);
      await fc.assert(
        fc.asyncProperty(withLatest, async (scenario) => {
          expect(await run(scenario)).toEqual([]);
        }),
        { numRuns: 10 },
      );
    }
  }, 60_000);
});

describe('MemoryStore: three receivers in one process', () => {
  test(`${RUNS.memory} random scenarios keep the ordering property`, async () => {
    const run = inProcess(new MemoryStore());
    await fc.assert(
      fc.asyncProperty(scenarios(6), async (scenario) => {
        expect(await run(scenario)).toEqual([]);
      }),
      { numRuns: RUNS.memory },
    );
  });
});

/** Worker processes on one store, and a way to run a scenario through them. */
class WorkerProcesses {
  readonly #processes: SpawnedProcess[];
  #run = 0;

  private constructor(processes: SpawnedProcess[]) {
    this.#processes = processes;
  }

  static async start(env: Record<string, string>): Promise<WorkerProcesses> {
    const processes = Array.from({ length: PROCESSES }, (_, index) =>
      spawnProcess(process.execPath, ['--import', 'tsx', WORKER], {
        name: `ordering worker ${index}`,
        cwd: ROOT,
        env,
        stdin: 'pipe',
      }),
    );
    const workers = new WorkerProcesses(processes);
    try {
      await Promise.all(processes.map((child) => child.waitFor(/^\{"ready":true\}$/m, 30_000)));
    } catch (error) {
      await workers.stop();
      throw error;
    }
    return workers;
  }

  /** Deal the scenario's queues to the processes, and wait until each has delivered its share. */
  async run(scenario: Scenario): Promise<void> {
    const run = ++this.#run;
    await Promise.all(
      this.#processes.map(async (child, index) => {
        const queues = scenario.queues.filter((_, queue) => queue % PROCESSES === index);
        child.child.stdin!.write(`${JSON.stringify({ run, queues })}\n`);
        const [line] = await child.waitFor(new RegExp(`^\\{"run":${run},.*\\}$`, 'm'), 120_000);
        const answer = JSON.parse(line) as { error?: string };
        if (answer.error !== undefined) throw new Error(`${child.name}: ${answer.error}`);
      }),
    );
  }

  async stop(): Promise<void> {
    for (const child of this.#processes) child.child.stdin?.end();
    await Promise.all(this.#processes.map((child) => child.stop()));
  }
}

/**
 * The property across worker processes on one store: `open` starts what the store needs and answers
 * the workers' environment and a clean-up.
 */
function acrossProcesses(
  name: string,
  runs: number,
  open: (suffix: string) => Promise<{ env: Record<string, string>; close: () => Promise<void> }>,
): void {
  describe(`${name}: ${PROCESSES} worker processes, ${WORKERS_PER_PROCESS} workers each`, () => {
    const suffix = crypto.randomUUID().replaceAll('-', '').slice(0, 12);
    let logServer: StandaloneRedis;
    let logClient: Redis;
    let log: RedisHandlerLog;
    let workers: WorkerProcesses | undefined;
    let close: () => Promise<void> = async () => {};

    beforeAll(async () => {
      logServer = await startStandalone();
      logClient = new Redis(logServer.url);
      const prefix = `ordering-log-${suffix}:`;
      log = new RedisHandlerLog(logClient, prefix);
      const opened = await open(suffix);
      close = opened.close;
      workers = await WorkerProcesses.start({
        ...opened.env,
        LOG_REDIS_URL: logServer.url,
        LOG_PREFIX: prefix,
      });
    }, 60_000);

    afterAll(async () => {
      await workers?.stop();
      await close();
      await log?.clear();
      logClient?.disconnect();
      await logServer?.stop();
    });

    test(`${runs} random scenarios keep the ordering property`, async () => {
      await fc.assert(
        fc.asyncProperty(scenarios(PROCESSES * WORKERS_PER_PROCESS), async (scenario) => {
          await workers!.run(scenario);
          expect(violations(scenario, await log.read(scenario))).toEqual([]);
        }),
        { numRuns: runs },
      );
    }, 180_000);
  });
}

acrossProcesses('RedisStore', RUNS.redis, async (suffix) => {
  const server = await startStandalone();
  return {
    env: { STORE: 'redis', REDIS_URL: server.url, STORE_PREFIX: `ordering-${suffix}:` },
    close: () => server.stop(),
  };
});

acrossProcesses('PostgresStore', RUNS.postgres, async (suffix) => {
  const connectionString = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const table = `webhook_events_ordering_property_${suffix}`;
  const pool = new pg.Pool({ connectionString, max: 2 });
  await new PostgresStore({ pool, table }).createTable();
  return {
    env: { STORE: 'postgres', DATABASE_URL: connectionString, PG_TABLE: table },
    async close() {
      await pool.query(`DROP TABLE IF EXISTS "${table}", "${table}_resources"`);
      await pool.end();
    },
  };
});

acrossProcesses('DynamoDBStore (dynalite)', RUNS.dynamodb, async () => {
  const dynalite = await startDynalite();
  const tableName = uniqueTableName('ordering-property');
  const client = clientFor(dynalite.endpoint);
  await new DynamoDBStore({ client, tableName }).createTable({ timeToLive: false });
  client.destroy();
  return {
    // dynalite answers one item's writes one after another: the deadline of a store call is raised
    // for it, as the other dynalite tests do; what is tested is the guard's answers, not its speed.
    env: {
      STORE: 'dynamodb',
      DYNAMODB_ENDPOINT: dynalite.endpoint,
      DYNAMODB_TABLE: tableName,
      STORE_TIMEOUT_MS: '10000',
    },
    close: () => dynalite.stop(),
  };
});
