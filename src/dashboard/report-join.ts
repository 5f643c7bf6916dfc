import type { ReceiverReport } from '../dev/report.js';
import type { Delivery, DeliveryAttempt } from '../sandbox/index.js';

/** How long a report may wait for its attempt to be recorded (the receiver may report first). */
const WAIT_MS = 10_000;
/** Slack between the sender's and the receiver's clocks and the answer's way back: same machine. */
const EARLY_MS = 1_000;
const LATE_MS = 5_000;
/** Reports kept waiting at most: an inbox worker's runs, which no attempt matches, must not pile up. */
const MAX_WAITING = 1_000;

/**
 * Joins what a receiver's `devReporter` says to the attempt it speaks of. Nothing in a delivery names
 * its attempt (the service sends no attempt id, and the dashboard adds no header the service would
 * not send), so a report is matched on what both sides saw: the event id once the signature held,
 * the status, and the time the answer was made, which falls within the attempt. Reports the sender
 * has not recorded yet wait a few seconds for their attempt.
 */
export class ReportJoiner {
  readonly #waiting: { report: ReceiverReport; until: number }[] = [];

  /**
   * Join `report` to its attempt among `deliveries`; answers the delivery it joined, or `undefined`
   * when it waits (or its attempt never comes: an inbox worker's later run, another sender).
   */
  add(report: ReceiverReport, deliveries: Iterable<Delivery>): Delivery | undefined {
    const joined = this.#join(report, deliveries);
    if (joined === undefined) {
      this.#waiting.push({ report, until: Date.now() + WAIT_MS });
      if (this.#waiting.length > MAX_WAITING) this.#waiting.shift();
    }
    return joined;
  }

  /** An attempt of `delivery` was recorded: join the reports that waited for it; answers whether any did. */
  attemptRecorded(delivery: Delivery): boolean {
    const now = Date.now();
    let joinedAny = false;
    for (let index = this.#waiting.length - 1; index >= 0; index--) {
      const waiting = this.#waiting[index]!;
      if (waiting.until < now || this.#join(waiting.report, [delivery]) !== undefined) {
        joinedAny ||= waiting.until >= now;
        this.#waiting.splice(index, 1);
      }
    }
    return joinedAny;
  }

  #join(report: ReceiverReport, deliveries: Iterable<Delivery>): Delivery | undefined {
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
}
