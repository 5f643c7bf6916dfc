/**
 * What the inbox holds, as figures: read on demand (`stats()`), and sampled by the worker's monitor,
 * which logs them and reports a backlog to `onError`.
 */
import type { Webhooks } from 'service-webhooks/core';
import { InboxBacklogError } from './errors.js';
import type { InboxBullQueue } from './inbox-queue.js';
import { type InboxLogger, inboxLog } from './log.js';

/**
 * The inbox's figures at one moment.
 *
 * @example
 * ```ts
 * const { depth, oldestWaitingMs, deadLettered } = await worker.stats();
 * metrics.gauge('webhooks.inbox.depth', depth);
 * ```
 */
export interface InboxStats {
  /** Events waiting for a worker. */
  readonly waiting: number;
  /** Events whose handlers run now. */
  readonly active: number;
  /** Events waiting for their next attempt (after a failure, or while another worker held them). */
  readonly delayed: number;
  /** `waiting + active + delayed`: everything not yet handled nor dead-lettered. */
  readonly depth: number;
  /** Events that failed their last attempt, kept in the dead-letter list until replayed or removed. */
  readonly deadLettered: number;
  /**
   * How long ago the door received the next event to run (the oldest waiting), in milliseconds;
   * `undefined` when none is waiting. How far the workers are behind.
   */
  readonly oldestWaitingMs: number | undefined;
}

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

/**
 * The worker's monitor: how often it samples the inbox, and the thresholds it reports to `onError`.
 *
 * @example
 * ```ts
 * startInboxWorker(webhooks, { connection, monitor: { intervalMs: 30_000, maxDepth: 10_000, maxWaitMs: 300_000 } });
 * ```
 */
export interface InboxMonitorOptions {
  /**
   * How often the figures are read and logged (`info`, message `webhook inbox`).
   * @default 60_000
   */
  readonly intervalMs?: number;
  /** Report an {@link InboxBacklogError} when more events than this are queued (`depth`). */
  readonly maxDepth?: number;
  /**
   * Report an {@link InboxBacklogError} when the next event to run was received longer ago than this.
   * @default 600_000 (10 minutes)
   */
  readonly maxWaitMs?: number;
}

/** Samples `queue` every interval: logs the figures, reports a backlog when it starts, and says when it ends. */
export class InboxMonitor {
  readonly #webhooks: Webhooks;
  readonly #logger: InboxLogger | undefined;
  readonly #queue: InboxBullQueue;
  readonly #maxDepth: number;
  readonly #maxWaitMs: number;
  readonly #timer: ReturnType<typeof setInterval>;
  #behind = false;
  #deadLettered: number | undefined;
  #sampling = false;

  constructor(
    webhooks: Webhooks,
    queue: InboxBullQueue,
    options: Required<InboxMonitorOptions>,
    logger: InboxLogger | undefined,
  ) {
    this.#webhooks = webhooks;
    this.#logger = logger;
    this.#queue = queue;
    this.#maxDepth = options.maxDepth;
    this.#maxWaitMs = options.maxWaitMs;
    this.#timer = setInterval(() => void this.sample(), options.intervalMs);
    // The monitor must never be what keeps a worker process alive.
    this.#timer.unref?.();
  }

  /** Read, log and check the figures once (also run by the timer); never rejects. */
  async sample(): Promise<InboxStats | undefined> {
    if (this.#sampling) return undefined;
    this.#sampling = true;
    const queueName = this.#queue.name;
    try {
      const stats = await inboxStats(this.#queue);
      inboxLog(this.#logger, 'info', { inbox: queueName, ...stats }, 'webhook inbox');
      this.#checkBacklog(stats);
      if (this.#deadLettered !== undefined && stats.deadLettered > this.#deadLettered) {
        // Each event is reported by the worker that dead-lettered it; this says how many are waiting.
        inboxLog(
          this.#logger,
          'warn',
          {
            inbox: queueName,
            deadLettered: stats.deadLettered,
            added: stats.deadLettered - this.#deadLettered,
          },
          'webhook inbox: events were dead-lettered; inspect and replay them (service-webhooks inbox list)',
        );
      }
      this.#deadLettered = stats.deadLettered;
      return stats;
    } catch (error) {
      inboxLog(
        this.#logger,
        'warn',
        { inbox: queueName, err: error },
        'webhook inbox: could not read the queue figures',
      );
      return undefined;
    } finally {
      this.#sampling = false;
    }
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  #checkBacklog(stats: InboxStats): void {
    const reasons: string[] = [];
    if (stats.depth > this.#maxDepth) reasons.push(`more than ${this.#maxDepth} events queued`);
    if (stats.oldestWaitingMs !== undefined && stats.oldestWaitingMs > this.#maxWaitMs) {
      reasons.push(`the next event waited more than ${this.#maxWaitMs} ms`);
    }
    if (reasons.length > 0 && !this.#behind) {
      this.#behind = true;
      this.#webhooks.report(
        new InboxBacklogError(this.#queue.name, stats.depth, stats.oldestWaitingMs, reasons.join(', ')),
      );
    } else if (reasons.length === 0 && this.#behind) {
      this.#behind = false;
      inboxLog(this.#logger, 'info', { inbox: this.#queue.name, ...stats }, 'webhook inbox: caught up');
    }
  }
}
