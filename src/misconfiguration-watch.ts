/** At most one warning this often: enough to be seen in a log, never a flood. */
const WARN_EVERY_MS = 60 * 60 * 1000;
/** Rejections in a row, with no verified delivery among them, before a warning. */
const REJECTIONS_BEFORE_WARNING = 3;

type Refusal = 'invalid_signature' | 'event_too_old';

const HINTS: Readonly<Record<Refusal, string>> = {
  invalid_signature:
    'their signatures match none of the configured secrets. Is `secret` the signing secret of this webhook registration (and the environment variable that holds it set in this deployment)?',
  event_too_old:
    "their signed `created` is outside the accepted window (maxEventAgeSeconds back, 5 minutes ahead). Is this machine's clock right (NTP)?",
};

/**
 * Notices a receiver that refuses every delivery for a reason that is almost always its own setup (a
 * wrong secret, a skewed clock) and says so on stderr, when no logger would show it. Rate-limited, and
 * quiet as soon as one delivery verifies: senders on the open internet that send garbage, or a missing
 * signature, are not counted.
 */
export class MisconfigurationWatch {
  #inARow = 0;
  #lastWarning = Number.NEGATIVE_INFINITY;
  readonly #now: () => number;
  readonly #warn: (message: string) => void;

  constructor(now: () => number = Date.now, warn: (message: string) => void = console.warn) {
    this.#now = now;
    this.#warn = warn;
  }

  /** A delivery passed verification: the setup works. */
  verified(): void {
    this.#inARow = 0;
  }

  /** A delivery was refused; only the refusals a misconfiguration causes are counted. */
  refused(code: string): void {
    if (code !== 'invalid_signature' && code !== 'event_too_old') return;
    if (++this.#inARow < REJECTIONS_BEFORE_WARNING) return;
    const now = this.#now();
    if (now - this.#lastWarning < WARN_EVERY_MS) return;
    this.#lastWarning = now;
    this.#warn(
      `[service-webhooks] The last ${this.#inARow} deliveries were refused with ${code} and none verified in between: ${HINTS[code]} (Said at most once an hour; pass a \`logger\` to see every delivery.)`,
    );
  }
}
