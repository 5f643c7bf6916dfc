/**
 * Flow control on pg-boss, with its real backend: the rate and the per-key slots kept in pg-boss's
 * own PostgreSQL (one statement per call), every worker in this process polling on its own (see
 * test/support/flow-control-scenarios.ts for what each scenario proves). On the newest pg-boss line
 * only: what is checked is the worker's gate and the database, which the pg-boss version does not
 * change (its deferral, a job written for later, is the conformance suite's on both lines).
 */
import { pgBossInbox, startPgBossWorker } from 'service-webhooks/pg-boss';
import { afterAll, beforeAll, describe } from 'vitest';
import { flowControlScenarios } from '../support/flow-control-scenarios.js';
import { BOSS_VERSIONS, dropSchema, type TestBoss, uniqueQueue, uniqueSchema } from './support.js';

const version = BOSS_VERSIONS.at(-1)!;
const schema = uniqueSchema();
let boss: TestBoss;

beforeAll(async () => {
  boss = await version.start(schema);
});

afterAll(async () => {
  await boss?.stop({ graceful: false, wait: true });
  await dropSchema(schema);
});

describe(version.name, () => {
  flowControlScenarios(version.name, async () => {
    const queue = uniqueQueue('flow');
    const inbox = pgBossInbox({ boss, queue });
    return {
      inbox,
      countsThrottled: true,
      async startWorker(webhooks, options) {
        return startPgBossWorker(webhooks, {
          boss,
          queue,
          schema,
          pollIntervalMs: 100,
          monitor: false,
          ...options,
        });
      },
      async close() {
        await boss.getDb().executeSql(`DELETE FROM ${schema}.job WHERE name LIKE $1`, [`${queue}%`]);
        await boss.getDb().executeSql('DELETE FROM webhook_flow_control WHERE key LIKE $1', [`%:${queue}%`]);
      },
    };
  });
});
