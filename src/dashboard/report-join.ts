import type { ReceiverReport } from '../dev/report.js';
import type { Delivery, DeliveryAttempt } from '../sandbox/index.js';

/** How long a report may wait for its attempt to be recorded (the receiver may report first). */
const WAIT_MS = 10_000;
/** Slack between the sender's and the receiver's clocks and the answer's way back: same machine. */
const EARLY_MS = 1_000;
const LATE_MS = 5_000;
/** Reports kept waiting at most; beyond it the oldest is given up as unmatched (and said so). */
const MAX_WAITING = 1_000;

/** A report no attempt nor delivery took within its wait, and why it is given up. */
export interface UnmatchedReport {
  readonly report: ReceiverReport;
  readonly why: 'no_attempt' | 'too_many_waiting';
}

/**
 * Joins what a receiver's `devReporter` says to the attempt it speaks of. Nothing in a delivery names
 * its attempt (the service sends no attempt id, and the dashboard adds no header the service would
 * not send), so a report is matched on what both sides saw: the event id once the signature held,
 * the status, and the time the answer was made, which falls within the attempt. Reports the sender
 * has not recorded yet wait a few seconds for their attempt.
 *
 * An inbox worker's run (its report carries `inboxRun`) answers no attempt: it is listed under the
 * newest delivery of its event, as one of its `worker_runs`. A report that nothing takes within its
 * wait is handed to `onUnmatched`, never dropped unsaid.
 */
export class ReportJoiner {
  readonly #waiting: { report: ReceiverReport; until: number }[] = [];
  readonly #onUnmatched: (unmatched: UnmatchedReport) => void;

  constructor(onUnmatched: (unmatched: UnmatchedReport) => void = () => {}) {
    this.#onUnmatched = onUnmatched;
  }

  /** Reports waiting for their attempt now. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Join `report` to its attempt (or, for a worker's run, its delivery) among `deliveries`, newest
   * first; answers the delivery it joined, or `undefined` when it waits.
   */
  add(report: ReceiverReport, deliveries: Iterable<Delivery>): Delivery | undefined {
    const joined = this.#join(report, deliveries);
    if (joined === undefined) {
      this.#waiting.push({ report, until: Date.now() + WAIT_MS });
      if (this.#waiting.length > MAX_WAITING) {
        this.#onUnmatched({ report: this.#waiting.shift()!.report, why: 'too_many_waiting' });
      }
    }
    return joined;
  }

  /**
   * `delivery` changed (an attempt recorded, a report joined): join the reports that waited for it;
   * answers whether any did.
   */
  attemptRecorded(delivery: Delivery): boolean {
    this.expire();
    let joinedAny = false;
    for (let index = this.#waiting.length - 1; index >= 0; index--) {
      const waiting = this.#waiting[index]!;
      if (this.#join(waiting.report, [delivery]) !== undefined) {
        joinedAny = true;
        this.#waiting.splice(index, 1);
      }
    }
    return joinedAny;
  }

  /** Give up the reports whose wait is over, each to `onUnmatched`; answers how many. */
  expire(now = Date.now()): number {
    let expired = 0;
    while (this.#waiting.length > 0 && this.#waiting[0]!.until < now) {
      this.#onUnmatched({ report: this.#waiting.shift()!.report, why: 'no_attempt' });
      expired++;
    }
    return expired;
  }

  #join(report: ReceiverReport, deliveries: Iterable<Delivery>): Delivery | undefined {
    if (report.inboxRun !== undefined) return this.#joinWorkerRun(report, deliveries);
    const at = Date.parse(report.at);
    let best: { delivery: Delivery; attempt: DeliveryAttempt; started: number } | undefined;
    for (const delivery of deliveries) {
      // Without an event id the delivery was refused before its signature held (a forged one, a wrong
      // secret): the status and the time are all there is to go on.
      if (report.eventId !== undefined && delivery.event_id !== report.eventId) continue;
      for (const attempt of delivery.attempts) {
        if (attempt.receiver != null || attempt.status !== report.status) continue;
        const started = Date.parse(attempt.started_at);
        if (at < started - EARLY_MS || at > started + attempt.duration_ms + LATE_MS) continue;
        if (best === undefined || started > best.started) best = { delivery, attempt, started };
      }
    }
    if (best === undefined) return undefined;
    best.attempt.receiver = report;
    return best.delivery;
  }

  /**
   * A worker's run belongs to the newest delivery of its event that the door answered 2xx (the runs
   * of a replayed delivery, a duplicate at the door, follow the one it queued). It waits until the
   * door's attempt is recorded.
   */
  #joinWorkerRun(report: ReceiverReport, deliveries: Iterable<Delivery>): Delivery | undefined {
    let acknowledged: Delivery | undefined;
    for (const delivery of deliveries) {
      if (delivery.event_id !== report.eventId) continue;
      // The door's own report says it queued the event; a 2xx without one (no report yet) will do.
      if (delivery.attempts.some((attempt) => attempt.receiver?.outcome === 'queued')) {
        acknowledged = delivery;
        break;
      }
      if (acknowledged === undefined && delivery.attempts.some((attempt) => isSuccess(attempt.status))) {
        acknowledged = delivery;
      }
    }
    if (acknowledged === undefined) return undefined;
    acknowledged.worker_runs ??= [];
    acknowledged.worker_runs.push(report);
    return acknowledged;
  }
}

function isSuccess(status: number | null): boolean {
  return status !== null && status >= 200 && status < 300;
}
