/** The fixed-window limiter on an injected clock: no waiting on real time. */
import { describe, expect, it } from 'vitest';
import { RateLimiter } from '../../src/sandbox/rate-limiter.js';

describe('RateLimiter', () => {
  it('allows `limit` requests per window, then refuses until the window ends', () => {
    let now = 1_000_000;
    const limiter = new RateLimiter({ limit: 2, windowMs: 60_000, now: () => now });
    expect(limiter.take('a')).toMatchObject({ allowed: true, remaining: 1, resetAt: 1060 });
    expect(limiter.take('a')).toMatchObject({ allowed: true, remaining: 0 });
    now += 30_500;
    expect(limiter.take('a')).toEqual({
      limit: 2,
      remaining: 0,
      resetAt: 1060,
      allowed: false,
      retryAfterSeconds: 30,
    });
    now += 29_500;
    expect(limiter.take('a')).toMatchObject({ allowed: true, remaining: 1, resetAt: 1120 });
  });

  it('keeps buckets apart and lets free requests through without counting them', () => {
    const limiter = new RateLimiter({ limit: 1, windowMs: 1000, now: () => 0 });
    expect(limiter.take('a').allowed).toBe(true);
    expect(limiter.take('b').allowed).toBe(true);
    expect(limiter.take('a', false)).toMatchObject({ allowed: true, remaining: 0 });
    expect(limiter.take('a').allowed).toBe(false);
  });
});
