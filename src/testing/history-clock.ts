/**
 * The time a generated history runs on: the real clock (real waits, for stores on their own clock), or
 * a virtual one (for stores that take the checker's `now`: no wait costs real time, and a history
 * replays exactly from its seed).
 */

/**
 * A timer that can be cancelled, so that a deadline that did not fire leaves nothing behind.
 *
 * @example
 * ```ts
 * const deadline = clock.timer(240);
 * await clock.park(Promise.race([call, deadline.fired]));
 * deadline.cancel();
 * ```
 */
export interface HistoryTimer {
  readonly fired: Promise<void>;
  cancel(): void;
}

/**
 * What the history runner asks of its clock. The activity calls matter to the virtual clock only: it
 * moves time forward when every activity (each client, and each store call in flight) is parked on it,
 * so a history never waits for real and never skips past work still being done.
 *
 * @example
 * ```ts
 * const clock: HistoryClock = virtual ? new VirtualClock() : new RealClock();
 * await clock.sleep(40);
 * ```
 */
export interface HistoryClock {
  /** Milliseconds since the history started. */
  now(): number;
  /** A timer of `ms` that does not park anyone: wait on it through {@link HistoryClock.park}. */
  timer(ms: number): HistoryTimer;
  /** Park the current activity for `ms`. */
  sleep(ms: number): Promise<void>;
  /** Wait for `promise` parked: the virtual clock may move on meanwhile. */
  park<T>(promise: Promise<T>): Promise<T>;
  /** An activity starts (a store call in flight): time does not move until it ends or parks. */
  begin(): void;
  /** An activity ends. */
  end(): void;
  /**
   * Drive the history until `done` settles: `release` hands the ready activities their turns (the
   * fast-check scheduler, which decides their order), and on the virtual clock time moves on whenever
   * everything is parked. Answers false when `hangMs` of real time passed first.
   */
  drive(
    done: Promise<void>,
    release: (until: Promise<unknown>) => Promise<unknown>,
    hangMs: number,
  ): Promise<boolean>;
}

/**
 * A macrotask turn: every promise callback queued before it has run by then. setImmediate where the
 * runtime has it (Node, Bun), a zero timeout elsewhere.
 */
function macrotask(): Promise<void> {
  const immediate = (globalThis as { setImmediate?: (callback: () => void) => unknown }).setImmediate;
  return new Promise((resolve) => (immediate ? immediate(resolve) : setTimeout(resolve, 0)));
}

/** Resolves after `ms` of real time, without keeping the process alive for it. */
function realDelay(ms: number): { promise: Promise<'timeout'>; cancel(): void } {
  let timeout: ReturnType<typeof setTimeout> | undefined;
  const promise = new Promise<'timeout'>((resolve) => {
    timeout = setTimeout(() => resolve('timeout'), ms);
    (timeout as { unref?: () => void }).unref?.();
  });
  return { promise, cancel: () => clearTimeout(timeout) };
}

/**
 * The real clock: `performance.now()` from the history's start, `setTimeout` for waits.
 *
 * @example
 * ```ts
 * const clock = new RealClock();
 * await clock.sleep(5);
 * clock.now(); // about 5
 * ```
 */
export class RealClock implements HistoryClock {
  readonly #origin = performance.now();

  now(): number {
    return performance.now() - this.#origin;
  }

  timer(ms: number): HistoryTimer {
    let timeout: ReturnType<typeof setTimeout> | undefined;
    const fired = new Promise<void>((resolve) => {
      timeout = setTimeout(resolve, Math.max(0, ms));
    });
    return { fired, cancel: () => clearTimeout(timeout) };
  }

  sleep(ms: number): Promise<void> {
    return this.timer(ms).fired;
  }

  park<T>(promise: Promise<T>): Promise<T> {
    return promise;
  }

  begin(): void {}

  end(): void {}

  async drive(
    done: Promise<void>,
    release: (until: Promise<unknown>) => Promise<unknown>,
    hangMs: number,
  ): Promise<boolean> {
    const hang = realDelay(hangMs);
    try {
      return (await release(Promise.race([done.then(() => 'done' as const), hang.promise]))) === 'done';
    } finally {
      hang.cancel();
    }
  }
}

interface PendingTimer {
  readonly at: number;
  readonly order: number;
  readonly wake: () => void;
}

/**
 * A virtual clock, discrete-event style: time stands still while any activity runs, and jumps to the
 * next timer once every activity is parked. "Parked" is confirmed after a macrotask turn (setImmediate),
 * so that a store call still working through promises and I/O callbacks is never mistaken for one
 * waiting on the clock.
 *
 * @example
 * ```ts
 * const clock = new VirtualClock();
 * const slept = clock.sleep(60_000); // resolves as soon as everything else is parked too
 * ```
 */
export class VirtualClock implements HistoryClock {
  #now = 0;
  #busy = 0;
  #order = 0;
  readonly #timers = new Set<PendingTimer>();
  #onIdle: (() => void) | undefined;

  now(): number {
    return this.#now;
  }

  timer(ms: number): HistoryTimer {
    let pending: PendingTimer | undefined;
    const fired = new Promise<void>((resolve) => {
      pending = { at: this.#now + Math.max(0, ms), order: ++this.#order, wake: resolve };
      this.#timers.add(pending);
    });
    return { fired, cancel: () => pending && this.#timers.delete(pending) };
  }

  sleep(ms: number): Promise<void> {
    return this.park(this.timer(ms).fired);
  }

  async park<T>(promise: Promise<T>): Promise<T> {
    this.end();
    try {
      return await promise;
    } finally {
      this.begin();
    }
  }

  begin(): void {
    this.#busy++;
  }

  end(): void {
    this.#busy--;
    if (this.#busy === 0) this.#onIdle?.();
  }

  async drive(
    done: Promise<void>,
    release: (until: Promise<unknown>) => Promise<unknown>,
    hangMs: number,
  ): Promise<boolean> {
    let finished = false;
    void done.then(() => {
      finished = true;
    });
    for (;;) {
      const hang = realDelay(hangMs);
      const outcome = await release(Promise.race([done, this.#parked(), hang.promise]));
      hang.cancel();
      if (finished) return true;
      if (outcome === 'timeout') return false;
      const next = this.#nextTimers();
      // Everything is parked and no timer is set: an activity waits on something that never comes.
      if (next.length === 0) return false;
      this.#now = next[0]!.at;
      for (const timer of next) {
        this.#timers.delete(timer);
        timer.wake();
      }
    }
  }

  /** The timers due first, in the order they were set. */
  #nextTimers(): PendingTimer[] {
    let at = Number.POSITIVE_INFINITY;
    for (const timer of this.#timers) at = Math.min(at, timer.at);
    return [...this.#timers].filter((timer) => timer.at === at).sort((a, b) => a.order - b.order);
  }

  /** Resolves once every activity is parked, confirmed after a macrotask turn. */
  async #parked(): Promise<'parked'> {
    for (;;) {
      if (this.#busy > 0) {
        await new Promise<void>((resolve) => {
          this.#onIdle = resolve;
        });
        this.#onIdle = undefined;
      }
      await macrotask();
      if (this.#busy === 0) return 'parked';
    }
  }
}
