/**
 * The workers' monitor, for every engine: it samples the inbox's figures, logs them, reports a backlog
 * to `onError` when it starts, and says when it ends.
 */

import type { InboxStats } from 'service-webhooks/core';
import {
  InboxBacklogError,
  type InboxLogger,
  type InboxMonitorOptions,
  type Webhooks,
} from 'service-webhooks/core';
import { inboxLog } from './log.js';

/** Samples the inbox (`readStats`) every interval: logs the figures, reports a backlog when it starts, and says when it ends. */
export class InboxMonitor {
  readonly #webhooks: Webhooks;
  readonly #logger: InboxLogger | undefined;
  readonly #inbox: string;
  readonly #readStats: () => Promise<InboxStats>;
  readonly #maxDepth: number;
  readonly #maxWaitMs: number;
  readonly #timer: ReturnType<typeof setInterval>;
  #behind = false;
  #deadLettered: number | undefined;
  #sampling = false;

  constructor(
    webhooks: Webhooks,
    inbox: string,
    readStats: () => Promise<InboxStats>,
    options: Required<InboxMonitorOptions>,
    logger: InboxLogger | undefined,
  ) {
    this.#webhooks = webhooks;
    this.#logger = logger;
    this.#inbox = inbox;
    this.#readStats = readStats;
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
    const queueName = this.#inbox;
    try {
      const stats = await this.#readStats();
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
        new InboxBacklogError(this.#inbox, stats.depth, stats.oldestWaitingMs, reasons.join(', ')),
      );
    } else if (reasons.length === 0 && this.#behind) {
      this.#behind = false;
      inboxLog(this.#logger, 'info', { inbox: this.#inbox, ...stats }, 'webhook inbox: caught up');
    }
  }
}
