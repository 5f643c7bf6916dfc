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
 * quiet as soon as the setup is shown to work. Senders on the open internet that send garbage, or no
 * signature, are not counted.
 *
 * Each cause has its own count, because each is reset by different evidence:
 * - a wrong secret: deliveries refused `invalid_signature`, reset by any delivery whose signature
 *   verified (whatever became of it after: bad JSON, too old, handled);
 * - a skewed clock: deliveries whose signature verified and that were refused `event_too_old`, reset by
 *   a verified delivery of acceptable age. A forged delivery in between says nothing about the clock,
 *   so it neither counts nor resets.
 */
export class MisconfigurationWatch {
  readonly #inARow: Record<Refusal, number> = { invalid_signature: 0, event_too_old: 0 };
  readonly #lastWarning: Record<Refusal, number> = {
    invalid_signature: Number.NEGATIVE_INFINITY,
    event_too_old: Number.NEGATIVE_INFINITY,
  };
  readonly #now: () => number;
  readonly #warn: (message: string) => void;

  constructor(now: () => number = Date.now, warn: (message: string) => void = console.warn) {
    this.#now = now;
    this.#warn = warn;
  }

  /** A delivery's signature verified and its age was accepted: both the secret and the clock work. */
  verified(): void {
    this.#inARow.invalid_signature = 0;
    this.#inARow.event_too_old = 0;
  }

  /** A delivery was refused; only the refusals a misconfiguration causes are counted. */
  refused(code: string): void {
    if (code === 'invalid_signature') this.#count('invalid_signature');
    else if (code === 'event_too_old') {
      // Its signature verified: the secret is right.
      this.#inARow.invalid_signature = 0;
      this.#count('event_too_old');
    } else if (code === 'invalid_request') {
      // Checked after the signature, which verified; the age was not reached, so the clock is untold.
      this.#inARow.invalid_signature = 0;
    }
  }

  #count(cause: Refusal): void {
    const inARow = ++this.#inARow[cause];
    if (inARow < REJECTIONS_BEFORE_WARNING) return;
    const now = this.#now();
    if (now - this.#lastWarning[cause] < WARN_EVERY_MS) return;
    this.#lastWarning[cause] = now;
    const which = cause === 'event_too_old' ? 'deliveries whose signature verified' : 'deliveries';
    this.#warn(
      `[service-webhooks] The last ${inARow} ${which} were refused with ${cause}: ${HINTS[cause]} (Said at most once an hour; pass a \`logger\` to see every delivery.)`,
    );
  }
}
