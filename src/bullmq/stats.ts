/** What a BullMQ inbox holds, as the figures every engine reports (`InboxStats`). */

import type { Redis } from 'ioredis';
import type { InboxStats } from 'service-webhooks/core';
import type { InboxBullQueue } from './inbox-queue.js';

/**
 * Read the figures of an inbox queue: two round trips (the counts, then the next waiting job).
 *
 * @example
 * ```ts
 * const stats = await inboxStats(inbox.queue);
 * ```
 */
export async function inboxStats(queue: InboxBullQueue): Promise<InboxStats> {
  const [counts, throttled] = await Promise.all([
    queue.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed'),
    throttledCounts(queue),
  ]);
  const waiting = (counts.waiting ?? 0) + (counts.prioritized ?? 0);
  const active = counts.active ?? 0;
  const delayed = counts.delayed ?? 0;
  let oldestWaitingMs: number | undefined;
  if (waiting > 0) {
    // `asc` reads the wait list from the end BullMQ takes jobs from: the next job to run.
    const [next] = await queue.getJobs(['wait'], 0, 0, true);
    const receivedAt = next?.data?.receivedAt ?? next?.timestamp;
    if (typeof receivedAt === 'number') oldestWaitingMs = Math.max(0, Date.now() - receivedAt);
  }
  return {
    waiting,
    active,
    delayed,
    depth: waiting + active + delayed,
    deadLettered: counts.failed ?? 0,
    oldestWaitingMs,
    ...throttled,
  };
}

/**
 * Where a worker records the jobs it deferred by flow control, each scored by the time it is due
 * again: `throttled` (its rate, a key's slots, the shared state out of reach), `rateLimited` (a
 * handler's `RateLimitedError`). A job counts while its time is ahead; a job deferred again moves its
 * score, so nothing is removed by hand (the stats prune what is past).
 *
 * @example
 * ```ts
 * const { throttled } = throttledKeys(queue); // 'bull:service-webhooks-inbox:sw:throttled'
 * ```
 */
export function throttledKeys(queue: InboxBullQueue): {
  readonly throttled: string;
  readonly rateLimited: string;
} {
  return { throttled: queue.toKey('sw:throttled'), rateLimited: queue.toKey('sw:rate-limited') };
}

async function throttledCounts(
  queue: InboxBullQueue,
): Promise<Pick<InboxStats, 'throttled' | 'rateLimited'>> {
  const keys = throttledKeys(queue);
  const client = await redisOf(queue);
  const now = Date.now();
  const answers = await client
    .multi()
    .zremrangebyscore(keys.throttled, '-inf', now)
    .zcard(keys.throttled)
    .zremrangebyscore(keys.rateLimited, '-inf', now)
    .zcard(keys.rateLimited)
    .exec();
  const count = (index: number) => Number(answers?.[index]?.[1] ?? 0);
  return { throttled: count(1), rateLimited: count(3) };
}

/**
 * The queue's ioredis client, once BullMQ connected it (BullMQ types it as its own interface).
 *
 * @example
 * ```ts
 * await (await redisOf(queue)).zadd(throttledKeys(queue).throttled, until, jobId);
 * ```
 */
export async function redisOf(queue: InboxBullQueue): Promise<Redis> {
  await queue.waitUntilReady();
  return queue.getBackend().client as unknown as Redis;
}
