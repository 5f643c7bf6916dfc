/** At most one warning this often: seen in any log while the grace lasts, never a flood. */
const WARN_EVERY_MS = 60 * 1000;

/**
 * Says that a worker runs inbox entries without a seal (`acceptUnsealed`, while the entries of a door
 * of an earlier version drain) on stderr, at most once a minute, with the count since the last
 * warning: stderr, not the logger, whose records are deliveries. The grace is meant to be switched off again; a
 * warning that keeps coming says it was not, or that someone writes unsealed entries to the queue.
 */
export class UnsealedEntriesWarning {
  readonly #now: () => number;
  readonly #warn: (message: string) => void;
  #lastWarning = Number.NEGATIVE_INFINITY;
  #unsaid = 0;

  constructor(now: () => number = Date.now, warn: (message: string) => void = console.warn) {
    this.#now = now;
    this.#warn = warn;
  }

  /** One unsealed entry is about to run. */
  note(): void {
    this.#unsaid++;
    const now = this.#now();
    if (now - this.#lastWarning < WARN_EVERY_MS) return;
    this.#lastWarning = now;
    const count = this.#unsaid;
    this.#unsaid = 0;
    this.#warn(
      `[service-webhooks] The inbox worker ran ${count} entr${count === 1 ? 'y' : 'ies'} without a seal (acceptUnsealedEntries): anyone who can write to the queue can make handlers run while it is on. Turn it off once the entries queued before the upgrade have drained. (Said at most once a minute.)`,
    );
  }
}
