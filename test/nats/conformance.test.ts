/**
 * The NATS JetStream inbox against inboxConformanceSuite, on the machine's NATS (each test on a
 * stream of its own): the contract every inbox engine keeps (see src/testing/inbox-conformance-suite.ts).
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { inboxConformanceSuite } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, test } from 'vitest';
import { natsUnderTest } from './nats-under-test.js';
import { connectNats } from './support.js';

let connection: NatsConnection;
let closed: NatsConnection;

beforeAll(async () => {
  connection = await connectNats();
  // A connection that worked, then closed: the door on it must answer 503.
  closed = await connectNats();
  await closed.close();
});

afterAll(async () => {
  await connection?.close();
});

inboxConformanceSuite({
  name: 'NATS JetStream',
  describe,
  test,
  retryDelayMs: 200,
  recoveryMs: 2_000,
  createInbox: () => natsUnderTest(connection, closed),
});
