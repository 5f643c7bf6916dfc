/**
 * The BullMQ inbox against inboxConformanceSuite, on a Redis server of this file's own: the contract
 * every inbox engine keeps (see src/testing/inbox-conformance-suite.ts).
 */
import { inboxConformanceSuite } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, test } from 'vitest';
import { RedisServer } from '../support/redis-servers.js';
import { bullmqUnderTest } from './bullmq-under-test.js';

let redis: RedisServer;

beforeAll(async () => {
  redis = await RedisServer.start();
});

afterAll(async () => {
  await redis?.destroy();
});

inboxConformanceSuite({
  name: 'BullMQ',
  describe,
  test,
  createInbox: () => bullmqUnderTest(redis.url),
});
