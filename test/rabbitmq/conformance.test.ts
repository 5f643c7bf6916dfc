/**
 * The RabbitMQ inbox against inboxConformanceSuite on the broker of this machine: the contract every
 * inbox engine keeps (see src/testing/inbox-conformance-suite.ts), the forged-entry rule included.
 * RabbitMQ does not deduplicate messages, so `dedupesEnqueue: false` (the suite then checks that the
 * store's claim runs the handlers once). A retry's delay is a holding queue's TTL plus a trip through
 * the inbox queue, so the schedule is kept within the suite's default slack.
 */
import type { ChannelModel } from 'amqplib';
import { inboxConformanceSuite } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, test } from 'vitest';
import { rabbitMQUnderTest } from './rabbitmq-under-test.js';
import { openConnection } from './support.js';

let connection: ChannelModel;

beforeAll(async () => {
  connection = await openConnection();
});

afterAll(async () => {
  await connection?.close();
});

inboxConformanceSuite({
  name: 'rabbitmq (quorum queue)',
  describe,
  test,
  retryDelayMs: 200,
  dedupesEnqueue: false,
  createInbox: () => rabbitMQUnderTest(connection),
});
