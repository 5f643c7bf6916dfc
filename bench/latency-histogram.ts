/**
 * Response times counted per whole microsecond, so the load runs of one variant pool into one
 * distribution: per round for the log, and over every round for the p50 and p99 rows.
 *
 * Why pool rather than take the median of each run's p99: at ~5k req/s one stall of the machine
 * (~100 ms, seen on these shared VMs) delays about 50 requests, which is a whole 1-second run's 1% and
 * sets that run's p99; over a variant's 42 seconds of load the same stall is 0.02% of its requests.
 * The median of per-run p99s thus measured how often the machine stalled, not the receiver's tail.
 */
export class LatencyHistogram {
  readonly #counts = new Map<number, number>();
  #total = 0;

  /** Record `count` responses that took `micros` (rounded to the microsecond). */
  add(micros: number, count = 1): void {
    const key = Math.round(micros);
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + count);
    this.#total += count;
  }

  /** Add every response of `other` to this histogram. */
  merge(other: LatencyHistogram): this {
    for (const [micros, count] of other.#counts) this.add(micros, count);
    return this;
  }

  /** Nearest-rank quantiles `qs` (0 < q ≤ 1) in milliseconds, NaN without responses. */
  quantiles(...qs: number[]): number[] {
    const sorted = [...this.#counts].sort(([a], [b]) => a - b);
    return qs.map((q) => {
      if (this.#total === 0) return Number.NaN;
      const rank = Math.ceil(q * this.#total);
      let seen = 0;
      for (const [micros, count] of sorted) {
        seen += count;
        if (seen >= rank) return micros / 1000;
      }
      return sorted.at(-1)![0] / 1000;
    });
  }
}
