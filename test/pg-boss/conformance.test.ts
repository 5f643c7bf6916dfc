/**
 * The pg-boss inbox against inboxConformanceSuite, on pg-boss 10 and 12, each in a schema of its own
 * on the test PostgreSQL: the contract every inbox engine keeps (see
 * src/testing/inbox-conformance-suite.ts).
 */
import { inboxConformanceSuite } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, test } from 'vitest';
import { pgBossUnderTest } from './pg-boss-under-test.js';
import { BOSS_VERSIONS, dropSchema, startProxy, type TestBoss, uniqueSchema } from './support.js';

for (const version of BOSS_VERSIONS) {
  const schema = uniqueSchema();
  const downSchema = uniqueSchema();
  let boss: TestBoss;
  let down: TestBoss;
  let proxy: Awaited<ReturnType<typeof startProxy>>;

  beforeAll(async () => {
    boss = await version.start(schema);
    // A pg-boss that worked, then lost PostgreSQL: the door on it must answer 503.
    proxy = await startProxy();
    down = await version.start(downSchema, proxy.url);
    proxy.cut();
  });

  afterAll(async () => {
    await proxy?.close();
    await down?.stop({ graceful: false, wait: true }).catch(() => {});
    await boss?.stop({ graceful: false, wait: true });
    await dropSchema(schema);
    await dropSchema(downSchema);
  });

  inboxConformanceSuite({
    name: version.name,
    describe,
    test,
    retryDelayMs: 200,
    recoveryMs: 2_000,
    createInbox: () => pgBossUnderTest(boss, schema, down),
  });
}
