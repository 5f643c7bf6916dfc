/**
 * How the dashboard shows one attempt's answer: a stale event (the receiver's `ordering` option had
 * handled a newer event of its resource) is a 200 of its own, beside a duplicate, in the attempt's
 * chip, its tone and the exported test's account of the answer.
 */
import { describe, expect, test } from 'vitest';
import type { DevAttempt } from '../../src/dashboard/api-types.js';
import { attemptText, attemptTone } from '../../src/dashboard/ui/format.js';

const answered = (overrides: Partial<DevAttempt>): DevAttempt => ({
  attempt: 1,
  started_at: '2026-11-28T18:00:00.000Z',
  duration_ms: 3,
  status: 200,
  error: null,
  response_body: '{"received":true}',
  code: null,
  duplicate: false,
  stale: false,
  retry_after: null,
  receiver: null,
  ...overrides,
});

describe('an attempt answered stale', () => {
  test('reads "200 stale" in a neutral tone, apart from a handled 200 and a duplicate', () => {
    const stale = answered({ stale: true, response_body: '{"received":true,"stale":true}' });
    expect(attemptText(stale)).toBe('200 stale');
    expect(attemptTone(stale)).toBe('info');
    expect(attemptText(answered({}))).toBe('200');
    expect(attemptTone(answered({}))).toBe('ok');
    expect(attemptText(answered({ duplicate: true }))).toBe('200 dup');
  });

  test('a busy resource reads as its 409 with the code resource_busy', () => {
    const busy = answered({ status: 409, code: 'resource_busy', retry_after: '44' });
    expect(attemptText(busy)).toBe('409');
    expect(attemptTone(busy)).toBe('warn');
  });
});
