/**
 * The SQS inbox (a standard queue, on fauxqs) against inboxConformanceSuite: the contract every inbox
 * engine keeps (see src/testing/inbox-conformance-suite.ts). A standard queue may hold two copies of
 * an event, so `dedupesEnqueue: false`; SQS counts delays and visibility in whole seconds.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import { inboxConformanceSuite } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, test } from 'vitest';
import { sqsUnderTest } from './sqs-under-test.js';
import { type Fauxqs, startSqs } from './support.js';

let sqs: Fauxqs;
let client: SQSClient;

beforeAll(async () => {
  sqs = await startSqs();
  client = sqs.client();
});

afterAll(async () => {
  client?.destroy();
  await sqs?.stop();
});

inboxConformanceSuite({
  name: 'sqs (standard queue)',
  describe,
  test,
  retryDelayMs: 1_000,
  scheduleSlackMs: 2_000,
  recoveryMs: 2_000,
  dedupesEnqueue: false,
  createInbox: () => sqsUnderTest(client),
});
