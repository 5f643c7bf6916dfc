/**
 * The options of service-webhooks/bullmq: mistakes throw a ConfigurationError that says what to change,
 * and the retry schedule is what the options say. No Redis is contacted.
 */
import { Redis } from 'ioredis';
import { ConfigurationError, createWebhooks } from 'service-webhooks';
import {
  bullmqInbox,
  formatDuration,
  INBOX_DEFAULTS,
  inboxAdmin,
  startInboxWorker,
} from 'service-webhooks/bullmq';
import { describe, expect, test } from 'vitest';
import { eventJobId } from '../../src/bullmq/job-data.js';
import { schedule } from '../../src/inbox/backoff.js';

const webhooks = createWebhooks({ secret: 'whsec_options' });
const url = 'redis://127.0.0.1:1';

describe('configuration mistakes', () => {
  test.each([
    ['no connection', () => bullmqInbox({} as never), /needs `connection`/],
    ['a URL of another scheme', () => bullmqInbox({ connection: 'http://redis' }), /redis:\/\/ URL/],
    ['a queue name with :', () => bullmqInbox({ connection: url, queueName: 'a:b' }), /without `:`/],
    ['a queue that is not a Queue', () => bullmqInbox({ queue: {} as never }), /must be a BullMQ Queue/],
    [
      'no receiver',
      () => startInboxWorker(undefined as never, { connection: url }),
      /receiver made by createWebhooks/,
    ],
    ['attempts 0', () => startInboxWorker(webhooks, { connection: url, attempts: 0 }), /`attempts` must be/],
    [
      'concurrency 1.5',
      () => startInboxWorker(webhooks, { connection: url, concurrency: 1.5 }),
      /`concurrency`/,
    ],
    [
      'an empty delay list',
      () => startInboxWorker(webhooks, { connection: url, backoff: [] }),
      /at least one delay/,
    ],
    ['a negative delay', () => startInboxWorker(webhooks, { connection: url, backoff: [100, -1] }), /≥ 0/],
    [
      'jitter above 1',
      () => startInboxWorker(webhooks, { connection: url, backoff: { jitter: 2 } }),
      /jitter/,
    ],
    [
      'a ceiling under the start',
      () => startInboxWorker(webhooks, { connection: url, backoff: { initialDelayMs: 10, maxDelayMs: 5 } }),
      /maxDelayMs/,
    ],
    [
      'acceptUnsealedEntries that is not a boolean',
      () => startInboxWorker(webhooks, { connection: url, acceptUnsealedEntries: 'yes' as never }),
      /`acceptUnsealedEntries` must be true or false/,
    ],
    ['no connection for the admin', () => inboxAdmin({} as never), /needs `connection`/],
  ])('%s', (_name, make, message) => {
    expect(make).toThrow(ConfigurationError);
    expect(make).toThrow(message);
  });

  test("the door's fail-fast client is refused by the worker, with the fix", () => {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    expect(() => startInboxWorker(webhooks, { connection: client })).toThrow(/maxRetriesPerRequest: null/);
    client.disconnect();
  });
});

describe('the retry schedule', () => {
  test('by default: 10 s doubling to 4 h, 25 attempts over about 2.4 days', () => {
    const retries = schedule(undefined, 'test');
    const noJitter = () => 0;
    expect([1, 2, 3, 9, 10, 11, 12, 24].map((n) => retries.delayMs(n, noJitter))).toEqual([
      10_000, 20_000, 40_000, 2_560_000, 5_120_000, 10_240_000, 14_400_000, 14_400_000,
    ]);
    expect(INBOX_DEFAULTS.attempts).toBe(25);
    expect(formatDuration(retries.spanMs(INBOX_DEFAULTS.attempts))).toBe('2.4 days');
    // Jitter takes up to 10% off, never adds.
    expect(retries.delayMs(1, () => 1)).toBe(9_000);
  });

  test('a list of delays: the n-th retry waits the n-th, and the last repeats', () => {
    const retries = schedule([100, 1_000, 60_000], 'test');
    expect([1, 2, 3, 4, 20].map((n) => retries.delayMs(n))).toEqual([100, 1_000, 60_000, 60_000, 60_000]);
    expect(retries.spanMs(5)).toBe(100 + 1_000 + 60_000 + 60_000);
  });
});

test('job ids are BullMQ-safe and distinct for distinct dedup keys', () => {
  const keys = ['#0123456789abcdef:evt_1', 'billing:evt_1', 'evt:1', 'evt%3A1', '123', '0', ''];
  const ids = keys.map(eventJobId);
  expect(new Set(ids).size).toBe(keys.length);
  for (const id of ids) {
    expect(id).not.toContain(':');
    expect(`${Number.parseInt(id, 10)}`).not.toBe(id);
  }
  expect(eventJobId('billing:evt_1')).toBe('e.billing%3Aevt_1');
});
