/** What a BullMQ inbox holds, as the figures every engine reports (`InboxStats`). */
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
  const counts = await queue.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed');
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
  };
}
