import { now } from './clock.js';

/**
 * One pending timeout of a {@link TimeoutQueue}: made by `add`, or by the caller and given to `schedule`
 * (an object the caller makes per delivery anyway can be the entry, and spare one).
 *
 * @internal
 */
export interface PendingTimeout {
  /** @internal */ deadline: number;
  /** @internal Given the entry, so that a function shared by every entry can find its state. */
  onTimeout: ((entry: PendingTimeout) => void) | undefined;
  /** @internal */ previous: PendingTimeout | undefined;
  /** @internal */ next: PendingTimeout | undefined;
}

/**
 * Where the queue's microtasks are scheduled: a reaction to a settled promise is one microtask, as
 * `queueMicrotask` is, without the AsyncResource Node's `queueMicrotask` makes per call (and, on a
 * process's first call, the async-hooks code it compiles). What the two callbacks run cannot throw.
 */
const settledPromise: Promise<void> = Promise.resolve();

/**
 * Timeouts of one fixed duration behind a single timer. Deadlines of one duration fall due in the order
 * they were set, so setting one is an append to a linked list and cancelling one is an unlink. A Node
 * timer per delivery (a Timeout object, async-hook ids, a timer-list lookup, then clearTimeout) cost
 * more than the rest of the dispatch in the receiver's CPU profile; this costs one small object.
 *
 * The timer is unref'd: a timeout only ever answers a delivery that something else (a server, the
 * Lambda runtime, a pending handler) is already keeping the process alive for.
 *
 * The timer is armed two microtasks after the `add` that needs it, not in it. A timer can only fire
 * from a later macrotask, so a deadline is met the same either way; but the usual caller adds a
 * timeout and then waits on a promise that has already settled (an async handler or a store that did
 * not have to wait), whose reaction runs first and cancels it. The first of those arms no timer at
 * all: a process's first Node timer costs about 0.2 ms (the timer lists, async ids), a tenth of a
 * Lambda's first delivery.
 *
 * From the second arming on, a queue found empty is armed all the same, for the deadline the arming
 * was for: an early timer is always correct (it fires, finds nothing due, and re-arms for the head or
 * rests), and while it is armed, every timeout added with a later deadline (all of them, at the
 * queue's own duration) needs no arming. The two reactions per delivery that an empty queue cost
 * otherwise (about 0.2 KB and two microtasks, the same again for every delivery) become one timer per
 * duration under steady load, which fires once and rests when the deliveries stop.
 *
 * @internal Exported by `service-webhooks/core` for the package's own plug-ins only.
 *
 * @example
 * ```ts
 * const deadlines = new TimeoutQueue(2_000);
 * const pending = deadlines.add(() => console.warn('no answer in 2 s'));
 * deadlines.cancel(pending); // answered in time
 * ```
 */
export class TimeoutQueue {
  readonly #ms: number;
  #head: PendingTimeout | undefined;
  #tail: PendingTimeout | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The deadline the timer is armed for, or Infinity when it is not armed. */
  #armedFor = Number.POSITIVE_INFINITY;
  /** Whether an arming is scheduled (see the class's comment). */
  #armingSoon = false;
  /** The deadline of the `add` that scheduled the arming: armed for even when nothing is pending then. */
  #armingFor = Number.POSITIVE_INFINITY;
  /** Whether an arming has found the queue empty once: from then on it arms the timer regardless. */
  #armsWhenEmpty = false;

  constructor(ms: number) {
    this.#ms = ms;
  }

  /** The duration of a timeout in this queue, in milliseconds, unless `add` is given another. */
  get ms(): number {
    return this.#ms;
  }

  /**
   * Call `onTimeout` once `ms` (by default the queue's duration) has passed since `startedAt` (a
   * reading of the core's clock, `now()`). `onTimeout` must not throw: it runs from the shared timer. A shorter
   * `ms` than the queue's (a Lambda with little time left) is placed by walking back from the tail,
   * which is cheap where such calls are rare or alone, as on Lambda.
   */
  add(onTimeout: () => void, startedAt = now(), ms = this.#ms): PendingTimeout {
    const entry: PendingTimeout = {
      deadline: startedAt + ms,
      onTimeout,
      previous: undefined,
      next: undefined,
    };
    this.#insert(entry);
    return entry;
  }

  /**
   * {@link add} with an entry the caller made: its `onTimeout(entry)` is called once `ms` has passed
   * since `startedAt`. The entry must not be in a queue already.
   */
  schedule(entry: PendingTimeout, startedAt: number, ms = this.#ms): void {
    entry.deadline = startedAt + ms;
    this.#insert(entry);
  }

  #insert(entry: PendingTimeout): void {
    // Almost always an append; a caller whose start predates the tail's is placed by walking back.
    let after = this.#tail;
    while (after !== undefined && after.deadline > entry.deadline) after = after.previous;
    this.#linkAfter(entry, after);
    if (entry.deadline < this.#armedFor && !this.#armingSoon) {
      this.#armingSoon = true;
      this.#armingFor = entry.deadline;
      settledPromise.then(this.#armSoon);
    }
  }

  /** Cancel a pending timeout. Answers false when it already fired (or was cancelled). */
  cancel(entry: PendingTimeout): boolean {
    if (entry.onTimeout === undefined) return false;
    this.#unlink(entry);
    return true;
  }

  #linkAfter(entry: PendingTimeout, after: PendingTimeout | undefined): void {
    const before = after === undefined ? this.#head : after.next;
    entry.previous = after;
    entry.next = before;
    if (after === undefined) this.#head = entry;
    else after.next = entry;
    if (before === undefined) this.#tail = entry;
    else before.previous = entry;
  }

  #unlink(entry: PendingTimeout): void {
    const { previous, next } = entry;
    if (previous === undefined) this.#head = next;
    else previous.next = next;
    if (next === undefined) this.#tail = previous;
    else next.previous = previous;
    entry.previous = entry.next = entry.onTimeout = undefined;
  }

  #arm(deadline: number): void {
    if (this.#armedFor !== Number.POSITIVE_INFINITY) clearTimeout(this.#timer);
    this.#armedFor = deadline;
    this.#timer = setTimeout(this.#fire, Math.max(1, Math.ceil(deadline - now())));
    (this.#timer as { unref?: () => void }).unref?.();
  }

  /** Past the reactions the caller registers right after `add`: those of promises already settled. */
  readonly #armSoon = (): void => {
    settledPromise.then(this.#armForHead);
  };

  readonly #armForHead = (): void => {
    this.#armingSoon = false;
    // The head has the earliest deadline still pending; cancelled entries were unlinked.
    const deadline = this.#head !== undefined ? this.#head.deadline : this.#emptyArming();
    if (deadline < this.#armedFor) this.#arm(deadline);
  };

  /** What an arming that found the queue empty arms for: nothing the first time, then its deadline. */
  #emptyArming(): number {
    if (this.#armsWhenEmpty) return this.#armingFor;
    this.#armsWhenEmpty = true;
    return Number.POSITIVE_INFINITY;
  }

  readonly #fire = (): void => {
    this.#armedFor = Number.POSITIVE_INFINITY;
    const time = now();
    while (this.#head !== undefined && this.#head.deadline <= time) {
      const entry = this.#head;
      const onTimeout = entry.onTimeout!;
      this.#unlink(entry);
      onTimeout(entry);
    }
    // Cancelled entries were unlinked, so the head is the next live deadline.
    if (this.#head !== undefined) this.#arm(this.#head.deadline);
  };
}
