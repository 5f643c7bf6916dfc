/**
 * The SQS inbox (a standard queue and a FIFO one, on fauxqs) against inboxConformanceSuite: the
 * contract every inbox engine keeps (see src/testing/inbox-conformance-suite.ts), with the
 * `retryDelayMs` docs/inbox/custom-engine.md gives for SQS. A standard queue may hold two copies of an
 * event, so `dedupesEnqueue: false`; SQS counts delays and visibility in whole seconds, and a FIFO
 * queue takes no per-message delay at all, so a retry copy there waits by other means.
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

inboxConformanceSuite({
  name: 'sqs (FIFO queue)',
  describe,
  test,
  retryDelayMs: 1_000,
  scheduleSlackMs: 2_000,
  recoveryMs: 2_000,
  createInbox: () => sqsUnderTest(client, { fifo: true }),
});
