/**
 * Difference bounds on the instants at which store calls took effect: what the linearizability search
 * (./linearizability.ts) knows about time while it tries one order of calls.
 *
 * A call took effect at some instant inside its [start, end] interval, unknown to the checker. Whether a
 * lease or a TTL had ended when a later call took effect compares two such instants: "x_new - x_writer
 * < leaseMs". Such constraints are differences of two variables, so the set of instants that satisfy
 * them all is a zone, kept as a difference-bound matrix (DBM), as timed-automata model checkers (UPPAAL)
 * keep clock zones: entry [i][j] is an upper bound on x_i - x_j, and after every added constraint the
 * matrix is closed (each bound is the tightest the others imply), which makes emptiness a check of the
 * diagonal and dropping a variable a matter of ignoring its row and column.
 *
 * The search needs four variables per key: the origin (x = 0, so that a call's interval is a bound on
 * x - 0), the call linearized last on that key (the next one takes effect no earlier), the call that
 * wrote the key's current record (its lease or TTL counts from there), and the call being tried.
 *
 * @example
 * ```ts
 * const zone = TimeBounds.unconstrained()
 *   .within(TimeBounds.NEXT, 10, 12) // the call ran from 10 ms to 12 ms
 *   ?.atMostAfter(TimeBounds.NEXT, TimeBounds.WRITER, 40); // and its record was still live
 * ```
 */
export class TimeBounds {
  /** The origin: x = 0. */
  static readonly ORIGIN = 0;
  /** The call linearized last on this key. */
  static readonly LAST = 1;
  /** The call that wrote the key's current record. */
  static readonly WRITER = 2;
  /** The call being tried next. */
  static readonly NEXT = 3;

  static readonly #SIZE = 4;

  /** Row-major: #bounds[i * 4 + j] bounds x_i - x_j from above (Infinity: no bound). */
  readonly #bounds: Float64Array;

  private constructor(bounds: Float64Array) {
    this.#bounds = bounds;
  }

  /**
   * No constraint on any variable but the origin.
   *
   * @example
   * ```ts
   * const zone = TimeBounds.unconstrained();
   * ```
   */
  static unconstrained(): TimeBounds {
    const size = TimeBounds.#SIZE;
    const bounds = new Float64Array(size * size).fill(Number.POSITIVE_INFINITY);
    for (let i = 0; i < size; i++) bounds[i * size + i] = 0;
    return new TimeBounds(bounds);
  }

  /**
   * The zone with x_i - x_j <= bound added, or undefined when no instants satisfy it with the rest.
   *
   * @example
   * ```ts
   * zone.constrain(TimeBounds.LAST, TimeBounds.NEXT, 0); // the next call takes effect no earlier
   * ```
   */
  constrain(i: number, j: number, bound: number): TimeBounds | undefined {
    const size = TimeBounds.#SIZE;
    const current = this.#bounds;
    if (bound >= current[i * size + j]!) return this;
    // A negative cycle through the new edge: x_i - x_j <= bound and x_j - x_i <= back contradict.
    if (bound + current[j * size + i]! < 0) return undefined;
    const next = new Float64Array(current);
    // Incremental closure: the only shorter paths are those through the new edge i -> j.
    for (let a = 0; a < size; a++) {
      const toI = current[a * size + i]!;
      if (toI === Number.POSITIVE_INFINITY) continue;
      for (let b = 0; b < size; b++) {
        const fromJ = current[j * size + b]!;
        if (fromJ === Number.POSITIVE_INFINITY) continue;
        const through = toI + bound + fromJ;
        if (through < next[a * size + b]!) next[a * size + b] = through;
      }
    }
    return new TimeBounds(next);
  }

  /**
   * x_variable within [start, end] (end may be Infinity: a call whose effect may land at any later time).
   *
   * @example
   * ```ts
   * zone.within(TimeBounds.NEXT, call.startMs, call.endMs);
   * ```
   */
  within(variable: number, start: number, end: number): TimeBounds | undefined {
    return this.constrain(variable, TimeBounds.ORIGIN, end)?.constrain(TimeBounds.ORIGIN, variable, -start);
  }

  /**
   * x_later - x_earlier <= ms: `later` took effect at most `ms` after `earlier`.
   *
   * @example
   * ```ts
   * zone.atMostAfter(TimeBounds.NEXT, TimeBounds.WRITER, leaseMs + toleranceMs); // the lease was live
   * ```
   */
  atMostAfter(later: number, earlier: number, ms: number): TimeBounds | undefined {
    return this.constrain(later, earlier, ms);
  }

  /**
   * x_later - x_earlier >= ms: `later` took effect at least `ms` after `earlier`.
   *
   * @example
   * ```ts
   * zone.atLeastAfter(TimeBounds.NEXT, TimeBounds.WRITER, leaseMs - toleranceMs); // the lease had ended
   * ```
   */
  atLeastAfter(later: number, earlier: number, ms: number): TimeBounds | undefined {
    return this.constrain(earlier, later, -ms);
  }

  /**
   * The zone once the call tried (NEXT) is linearized: it becomes LAST, and WRITER too when it wrote the
   * record (`wrote`), or WRITER is dropped when the key no longer has a record that counts time
   * (`wrote === 'none'`). NEXT is free again. The zone is closed, so dropping a variable loses nothing
   * about the others.
   *
   * @example
   * ```ts
   * const after = zone.advance('next'); // a claim that took the key
   * ```
   */
  advance(wrote: 'next' | 'kept' | 'none'): TimeBounds {
    const size = TimeBounds.#SIZE;
    const { ORIGIN, WRITER, NEXT } = TimeBounds;
    // Where each variable of the new zone (ORIGIN, LAST, WRITER, NEXT) comes from in this one (-1: a
    // fresh, unconstrained variable).
    const source = [ORIGIN, NEXT, wrote === 'next' ? NEXT : wrote === 'kept' ? WRITER : -1, -1];
    const current = this.#bounds;
    const next = new Float64Array(size * size).fill(Number.POSITIVE_INFINITY);
    for (let a = 0; a < size; a++) {
      next[a * size + a] = 0;
      const from = source[a]!;
      if (from < 0) continue;
      for (let b = 0; b < size; b++) {
        const to = source[b]!;
        if (to < 0 || a === b) continue;
        next[a * size + b] = current[from * size + to]!;
      }
    }
    return new TimeBounds(next);
  }

  /**
   * The earliest and latest instant the variable may have, given everything added so far.
   *
   * @example
   * ```ts
   * const [earliest, latest] = zone.range(TimeBounds.WRITER);
   * ```
   */
  range(variable: number): readonly [number, number] {
    const size = TimeBounds.#SIZE;
    return [-this.#bounds[TimeBounds.ORIGIN * size + variable]!, this.#bounds[variable * size]!];
  }

  /**
   * A string equal for equal zones: the search remembers the (order, zone) pairs it has explored.
   *
   * @example
   * ```ts
   * seen.add(`${linearized}|${zone.fingerprint()}`);
   * ```
   */
  fingerprint(): string {
    return Array.from(this.#bounds, (bound) => (bound === Number.POSITIVE_INFINITY ? '∞' : bound)).join(',');
  }
}
