/**
 * RateLimitedError and rateLimitedError(): the wait read from a 429's headers (Retry-After in seconds
 * or as an HTTP date, the service's X-RateLimit-Reset as a Unix time or a delay), bounded from a
 * second to an hour; and the worker's options for flow control, checked alike on every engine.
 */
import {
  RATE_LIMIT_DEFAULT_WAIT_MS,
  RATE_LIMIT_MAX_WAIT_MS,
  RATE_LIMIT_MIN_WAIT_MS,
  RateLimitedError,
  rateLimitedError,
  WebhookError,
} from 'service-webhooks';
import { rateLimitedIn } from 'service-webhooks/core';
import { expect, test } from 'vitest';
import { judgeFailure } from '../../src/inbox/attempt-outcome.js';
import { schedule } from '../../src/inbox/backoff.js';
import { flowSettings } from '../../src/inbox/worker-options.js';

const NOW = Date.parse('2026-11-28T12:00:00Z');

test('RateLimitedError is a WebhookError with the stable code rate_limited, its wait bounded', () => {
  const error = new RateLimitedError(30_000);
  expect(error).toBeInstanceOf(WebhookError);
  expect(error.code).toBe('rate_limited');
  // Its row of the status table: what a receiver without an inbox answers.
  expect(error.status).toBe(503);
  expect(error.retryAfterMs).toBe(30_000);
  expect(new RateLimitedError(0).retryAfterMs).toBe(RATE_LIMIT_MIN_WAIT_MS);
  expect(new RateLimitedError(-5).retryAfterMs).toBe(RATE_LIMIT_MIN_WAIT_MS);
  expect(new RateLimitedError(30 * 86_400_000).retryAfterMs).toBe(RATE_LIMIT_MAX_WAIT_MS);
  expect(new RateLimitedError(Number.NaN).retryAfterMs).toBe(RATE_LIMIT_DEFAULT_WAIT_MS);
});

test('Retry-After in seconds, from a fetch Response', () => {
  const answer = new Response(null, { status: 429, headers: { 'Retry-After': '120' } });
  expect(rateLimitedError(answer, NOW).retryAfterMs).toBe(120_000);
});

test('Retry-After as an HTTP date, from plain headers in any case', () => {
  const headers = { 'retry-after': new Date(NOW + 90_000).toUTCString() };
  expect(rateLimitedError({ headers }, NOW).retryAfterMs).toBe(90_000);
  expect(rateLimitedError(new Headers({ 'RETRY-AFTER': '7' }), NOW).retryAfterMs).toBe(7_000);
});

test('X-RateLimit-Reset: a Unix time in seconds, or a delay in seconds (the spec leaves the unit open)', () => {
  const unix = String(Math.floor(NOW / 1000) + 600);
  expect(rateLimitedError({ 'X-RateLimit-Reset': unix }, NOW).retryAfterMs).toBe(600_000);
  expect(rateLimitedError({ 'x-ratelimit-reset': '45' }, NOW).retryAfterMs).toBe(45_000);
  // Retry-After wins when both are given: it is the one whose unit is known.
  expect(rateLimitedError({ 'retry-after': '5', 'x-ratelimit-reset': unix }, NOW).retryAfterMs).toBe(5_000);
});

test('a wait absurdly far away is capped at an hour; one already past, or nothing usable, is bounded too', () => {
  expect(rateLimitedError({ 'retry-after': '999999999' }, NOW).retryAfterMs).toBe(RATE_LIMIT_MAX_WAIT_MS);
  const nextYear = String(Math.floor(NOW / 1000) + 365 * 86_400);
  expect(rateLimitedError({ 'x-ratelimit-reset': nextYear }, NOW).retryAfterMs).toBe(RATE_LIMIT_MAX_WAIT_MS);
  const past = String(Math.floor(NOW / 1000) - 60);
  expect(rateLimitedError({ 'x-ratelimit-reset': past }, NOW).retryAfterMs).toBe(RATE_LIMIT_MIN_WAIT_MS);
  expect(rateLimitedError({ 'retry-after': 'soon' }, NOW).retryAfterMs).toBe(RATE_LIMIT_DEFAULT_WAIT_MS);
  expect(rateLimitedError({}, NOW).retryAfterMs).toBe(RATE_LIMIT_DEFAULT_WAIT_MS);
});

test('the worker defers a rate-limited run at least as long as asked, on any attempt, without dead-lettering', () => {
  const retries = schedule([1_000], 'test');
  const thrown = new Error('handler_failed', { cause: new RateLimitedError(10_000) });
  expect(rateLimitedIn(thrown)?.retryAfterMs).toBe(10_000);
  // The last attempt: a failure would dead-letter; a 429 waits instead.
  const verdict = judgeFailure(thrown, 3, 3, retries, () => 1);
  expect(verdict).toEqual({ kind: 'defer', delayMs: 12_000, reason: 'downstream' });
  expect(judgeFailure(thrown, 3, 3, retries, () => 0)).toMatchObject({ delayMs: 10_000 });
  expect(judgeFailure(new Error('boom'), 3, 3, retries).kind).toBe('dead-letter');
});

test('flow-control options: checked alike on every engine, nothing without rate or concurrencyPerKey', () => {
  const backend = {
    acquireRate: async () => ({ granted: true as const }),
    acquireSlot: async () => ({ granted: true as const }),
    renewSlot: async () => true,
    releaseSlot: async () => {},
  };
  const engine = () => backend;
  expect(flowSettings('w()', 'q', {}, engine)).toBeUndefined();
  const settings = flowSettings('w()', 'q', { rate: { max: 60, perMs: 60_000 } }, engine);
  expect(settings).toMatchObject({
    queue: 'q',
    rate: { max: 60, perMs: 60_000, marginMs: 1_000 },
    holdMs: 2_000,
  });
  expect(flowSettings('w()', 'q', { rate: { max: 6, perMs: 1_000 } }, engine)?.rate?.marginMs).toBe(100);
  expect(() => flowSettings('w()', 'q', { rate: { max: 0, perMs: 1_000 } }, engine)).toThrow(/rate\.max/);
  expect(() => flowSettings('w()', 'q', { rate: { perMs: 1_000 } as never }, engine)).toThrow(
    /rate\.max.*required/,
  );
  expect(() =>
    flowSettings('w()', 'q', { concurrencyPerKey: { key: 'tenant' as never, max: 2 } }, engine),
  ).toThrow(/key/);
  expect(() => flowSettings('w()', 'q', { rate: { max: 1, perMs: 1 } }, undefined)).toThrow(/flowControl/);
  // A store that can host the state is taken for its flowControl().
  const source = { flowControl: () => backend };
  expect(
    flowSettings('w()', 'q', { rate: { max: 1, perMs: 1 }, flowControl: source }, undefined)?.backend,
  ).toBe(backend);
  expect(() =>
    flowSettings('w()', 'q', { rate: { max: 1, perMs: 1 }, flowControl: {} as never }, undefined),
  ).toThrow(/flowControl/);
});
