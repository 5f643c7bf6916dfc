import type { IdempotencyStore } from 'service-webhooks/core';
import type { HistoryClock } from './history-clock.js';
import { faultHook, type StoreCheckContext } from './store-check-context.js';
import type { ClientStep, HistoryPlan, TokenPick } from './store-histories.js';
import { plannedKey } from './store-histories.js';
import type { StoreAnswer, StoreCall } from './store-model.js';

/**
 * One store call as it happened: who made it, on which key, when (`startSeq`/`endSeq` order the
 * history's events, `startMs`/`endMs` are the history's clock) and how it ended. A call the client gave
 * up on at the deadline is `abandoned`, and still recorded when it settles later (its write may land
 * then). A call that had not settled when the history ended is `pending`.
 *
 * @example
 * ```ts
 * if (call.outcome.kind === 'answered') console.log(call.call.method, call.outcome.answer);
 * ```
 */
export interface RecordedCall {
  readonly id: number;
  readonly client: number;
  readonly key: number;
  readonly call: StoreCall;
  readonly startSeq: number;
  readonly startMs: number;
  endSeq: number;
  endMs: number;
  outcome:
    | { readonly kind: 'answered'; readonly answer: StoreAnswer }
    | { readonly kind: 'threw'; readonly error: string }
    | { readonly kind: 'pending' };
  abandoned: boolean;
}

/**
 * A fault the hook injected: what it did, the operation the store named, and where it fell among the
 * history's events (`seq`, on the scale of the calls' `startSeq` and `endSeq`).
 *
 * @example
 * ```ts
 * const fault: InjectedFault = { choice: 'throw', operation: 'claim request', seq: 12, atMs: 30, callId: 4 };
 * ```
 */
export interface InjectedFault {
  readonly choice: 'throw' | 'slow';
  readonly operation: string;
  readonly seq: number;
  readonly atMs: number;
  /**
   * The call the fault hit, when the runner can tell: the store asked for it synchronously within the
   * call (before its first await), or that call was the only one in flight. Tracking async context
   * would tell always, but AsyncLocalStorage slows every promise on Node 20 by an order of magnitude.
   */
  readonly callId: number | undefined;
}

/**
 * A history once run: the keys as the store saw them, what each token stands for (`p1:4`, the 4th token
 * of process 1), every call, and the faults injected.
 *
 * @example
 * ```ts
 * const history = await runHistory(plan, options);
 * history.calls.length; // calls made
 * ```
 */
export interface RecordedHistory {
  readonly plan: HistoryPlan;
  readonly keyPrefix: string;
  readonly keys: readonly string[];
  readonly tokenLabels: ReadonlyMap<string, string>;
  readonly calls: readonly RecordedCall[];
  readonly faults: readonly InjectedFault[];
  /** False when calls were still pending after `hangMs`. */
  readonly settled: boolean;
}

/**
 * How {@link runHistory} runs a plan.
 *
 * @example
 * ```ts
 * await runHistory(plan, {
 *   openStore: async () => new MemoryStore(), clock: new RealClock(), keyPrefix: 'h1-',
 *   gate: (label) => s.schedule(Promise.resolve(label), label), release: (until) => s.waitFor(until),
 *   deadlineMs: 120, hangMs: 10_000, renews: true, longestWaitMs: 120, slowMs: 150,
 * });
 * ```
 */
export interface RunHistoryOptions {
  /** The store for this history, made from its context (the fault hook, the clock, the key prefix). */
  readonly openStore: (context: StoreCheckContext) => Promise<IdempotencyStore>;
  readonly clock: HistoryClock;
  /** Put before every key: unique to the history, so histories never share records. */
  readonly keyPrefix: string;
  /** Let the scheduler decide which ready client goes next (resolves when it is this one's turn). */
  readonly gate: (label: string) => Promise<unknown>;
  /** Run the scheduler until `until` settles (fast-check's `waitFor`). */
  readonly release: (until: Promise<unknown>) => Promise<unknown>;
  /** A client waits this long for a call, then gives up on it (as the core does at `storeTimeoutMs`). */
  readonly deadlineMs: number;
  /** Real time to wait for calls still pending once every client is done. */
  readonly hangMs: number;
  readonly renews: boolean;
  /** `waitForEnd` steps wait at most this long (an end further away is not waited for). */
  readonly longestWaitMs: number;
  /** How long a slow fault holds a call (past `deadlineMs`). */
  readonly slowMs: number;
}

/**
 * The keys of a plan as the store sees them: the history's prefix first (so histories never collide),
 * long keys padded between prefix and text to exactly 400 characters, and colliding ones computed for the
 * prefix ({@link plannedKey}).
 *
 * @example
 * ```ts
 * plannedKeys(plan, 'h7-'); // ['h7-evt_Payment_7', 'h7-evt_payment_7']
 * ```
 */
export function plannedKeys(plan: HistoryPlan, keyPrefix: string): string[] {
  return plan.keys.map((key) => plannedKey(key, keyPrefix));
}

/**
 * Run a plan against a store: every client's program at once, each step's turn given by the scheduler,
 * every call recorded with its interval and outcome. Answers once every client is done and every call
 * has settled (or `hangMs` passed).
 *
 * @example
 * ```ts
 * const history = await runHistory(plan, options);
 * ```
 */
export async function runHistory(plan: HistoryPlan, options: RunHistoryOptions): Promise<RecordedHistory> {
  const { clock } = options;
  const faults: InjectedFault[] = [];
  const keys = plannedKeys(plan, options.keyPrefix);
  const calls: RecordedCall[] = [];
  const inFlight = new Set<Promise<void>>();
  const tokenLabels = new Map<string, string>();
  /** When the lease or TTL written last on each key ends, as far as the answers tell (any client's). */
  const keyEnds = new Map<number, number>();
  /** Wakes the clients waiting for the next write on a key. */
  const keyWritten = new Map<number, () => void>();
  const nextWrite = (key: number): Promise<void> => {
    const waiting = keyWritten.get(key);
    let wake = () => {};
    const next = new Promise<void>((resolve) => {
      wake = resolve;
    });
    keyWritten.set(key, () => {
      waiting?.();
      wake();
    });
    return next;
  };
  const counters = plan.processes.map(() => 0);
  let seq = 0;
  let stopped = false;
  /** The call whose store method is running synchronously right now. */
  let current: number | undefined;
  const hitCall = (): number | undefined => {
    if (current !== undefined) return current;
    const inFlight = calls.filter((recorded) => recorded.outcome.kind === 'pending');
    return inFlight.length === 1 ? inFlight[0]!.id : undefined;
  };
  let faultCallId: number | undefined;
  const injectFault = faultHook(plan.faults, clock, options.slowMs, (choice, operation) =>
    faults.push({ choice, operation, seq: ++seq, atMs: clock.now(), callId: faultCallId }),
  );
  const store = await options.openStore({
    now: () => clock.now(),
    fault: async (operation) => {
      // The call the fault would hit is known only now, synchronously within it (see hitCall).
      const callId = hitCall();
      // Each backend request is a turn the scheduler gives too, not only each step: calls that start
      // together then interleave request by request in the seed's order (one claim's read, another's
      // read, the first's delete...), where otherwise they would run in lockstep.
      await options.gate(operation);
      faultCallId = callId;
      try {
        return injectFault(operation);
      } finally {
        faultCallId = undefined;
      }
    },
    keyPrefix: options.keyPrefix,
  });

  const freshToken = (client: number): string => {
    const process = client % plan.processes.length;
    const count = ++counters[process]!;
    // The core's shape (src/claim-token.ts): the process's UUID, ':', a counter in base 36.
    const token = `${plan.processes[process]}:${count.toString(36)}`;
    tokenLabels.set(token, `p${process}:${count.toString(36)}`);
    return token;
  };

  /** Make one call, wait for it up to the deadline; its answer, or undefined if it threw or was late. */
  const perform = async (client: number, key: number, call: StoreCall): Promise<StoreAnswer | undefined> => {
    const recorded: RecordedCall = {
      id: calls.length,
      client,
      key,
      call,
      startSeq: ++seq,
      startMs: clock.now(),
      endSeq: Number.POSITIVE_INFINITY,
      endMs: Number.POSITIVE_INFINITY,
      outcome: { kind: 'pending' },
      abandoned: false,
    };
    calls.push(recorded);
    clock.begin();
    let answer: Promise<StoreAnswer>;
    current = recorded.id;
    try {
      answer = Promise.resolve(invoke(store, keys[key]!, call));
    } catch (error) {
      answer = Promise.reject(error);
    } finally {
      current = undefined;
    }
    const settled = answer
      .then(
        (value) => {
          recorded.endSeq = ++seq;
          recorded.endMs = clock.now();
          recorded.outcome = { kind: 'answered', answer: value };
        },
        (error: unknown) => {
          recorded.endSeq = ++seq;
          recorded.endMs = clock.now();
          recorded.outcome = { kind: 'threw', error: describeError(error) };
        },
      )
      .finally(() => clock.end());
    inFlight.add(settled);
    void settled.then(() => inFlight.delete(settled));
    const deadline = clock.timer(options.deadlineMs);
    const first = await clock.park(
      Promise.race([settled.then(() => 'settled' as const), deadline.fired.then(() => 'late' as const)]),
    );
    deadline.cancel();
    if (first === 'late') {
      recorded.abandoned = true;
      return undefined;
    }
    return recorded.outcome.kind === 'answered' ? recorded.outcome.answer : undefined;
  };

  const runClient = async (client: number, program: readonly ClientStep[]): Promise<void> => {
    const mine = new Map<number, string[]>();
    const own = (key: number) => {
      const list = mine.get(key) ?? [];
      mine.set(key, list);
      return list;
    };
    const pick = (key: number, choice: TokenPick): string => {
      const list = own(key);
      if (choice === 'latest' && list.length > 0) return list[list.length - 1]!;
      if (choice === 'earlier' && list.length > 0) return list[Math.max(0, list.length - 2)]!;
      return freshToken(client);
    };
    /** When the lease or TTL this client wrote last ends (its call's start plus the duration). */
    let lastEnd: number | undefined;
    const wrote = (key: number, startMs: number, ms: number) => {
      lastEnd = startMs + ms;
      keyEnds.set(key, lastEnd);
      keyWritten.get(key)?.();
      keyWritten.delete(key);
    };
    /** Sleep until `offsetMs` around `end`, when that is ahead and within reach. */
    const sleepUntil = async (end: number | undefined, offsetMs: number) => {
      // Only ends within reach: a completion kept for an hour is not waited for.
      const wait = end === undefined ? 0 : end + offsetMs - clock.now();
      if (wait > 0 && wait <= options.longestWaitMs) await clock.sleep(wait);
    };
    /**
     * Sleep until `offsetMs` around the end of the lease or TTL written last on `key`, and again if
     * another write moved that end meanwhile (a completion after the lease waited for): a few times.
     */
    const untilKeyFrees = async (key: number, offsetMs: number) => {
      for (let round = 0; round < 3; round++) {
        const end = keyEnds.get(key);
        if (end === undefined || end + offsetMs <= clock.now()) {
          // Nothing ahead to wait for: wait for the next write on the key (within reach), then its end.
          const timer = clock.timer(options.longestWaitMs);
          const written = await clock.park(
            Promise.race([nextWrite(key).then(() => true), timer.fired.then(() => false)]),
          );
          timer.cancel();
          if (!written) return;
          continue;
        }
        await sleepUntil(end, offsetMs);
        if (keyEnds.get(key) === end) return;
      }
    };
    const call = async (key: number, made: StoreCall): Promise<StoreAnswer | undefined> => {
      const startMs = clock.now();
      const answer = await perform(client, key, made);
      if (
        made.method !== 'release' &&
        (answer === 'claimed' || answer === 'completed' || answer === 'renewed')
      ) {
        // 'completed' from a claim is someone else's record: only this client's own writes count.
        if (!(made.method === 'claim' && answer === 'completed')) wrote(key, startMs, made.ms);
      }
      return answer;
    };

    clock.begin();
    try {
      for (const [index, step] of program.entries()) {
        await options.gate(`c${client} step ${index}`);
        // A history given up on (calls that never settled) stops its clients at their next step.
        if (stopped) return;
        switch (step.kind) {
          case 'vanish':
            return;
          case 'wait':
            await clock.sleep(step.ms);
            break;
          case 'waitForEnd':
            await sleepUntil(lastEnd, step.offsetMs);
            break;
          case 'claim': {
            if (step.atKeyEndMs !== undefined) await untilKeyFrees(step.key, step.atKeyEndMs);
            const token = freshToken(client);
            own(step.key).push(token);
            await call(step.key, { method: 'claim', token, ms: step.leaseMs });
            break;
          }
          case 'complete':
            await call(step.key, { method: 'complete', token: pick(step.key, step.token), ms: step.ttlMs });
            break;
          case 'release':
            await call(step.key, { method: 'release', token: pick(step.key, step.token) });
            break;
          case 'renew':
            await call(step.key, { method: 'renew', token: pick(step.key, step.token), ms: step.leaseMs });
            break;
          case 'deliver': {
            if (step.atKeyEndMs !== undefined) await untilKeyFrees(step.key, step.atKeyEndMs);
            const token = freshToken(client);
            own(step.key).push(token);
            if ((await call(step.key, { method: 'claim', token, ms: step.leaseMs })) !== 'claimed') break;
            // The core renews every third of the lease while handlers run past it (when the store renews).
            const every = Math.max(1, Math.floor(step.leaseMs / 3));
            if (step.pauseMs !== undefined && step.pauseMs > 0) {
              // Frozen without renewing; on waking, the overdue renewal fires first where the work is
              // long enough to have the timer running. Its answer does not stop the delivery: the core
              // reports a lost lease and lets the handlers finish.
              await clock.sleep(step.pauseMs);
              if (options.renews && step.workMs > every) {
                await call(step.key, { method: 'renew', token, ms: step.leaseMs });
              }
            }
            let worked = 0;
            while (options.renews && step.workMs - worked > every) {
              await clock.sleep(every);
              worked += every;
              const renewed = await call(step.key, { method: 'renew', token, ms: step.leaseMs });
              if (renewed !== 'renewed') break;
            }
            if (step.workMs > worked) await clock.sleep(step.workMs - worked);
            if (step.ending === 'vanish') return;
            if (step.ending !== 'release')
              await call(step.key, { method: 'complete', token, ms: step.ttlMs });
            if (step.ending !== 'complete') await call(step.key, { method: 'release', token });
            break;
          }
        }
      }
    } finally {
      clock.end();
    }
  };

  const clients = plan.clients.map((program, client) => runClient(client, program));
  // Done when every client is, and every call it made has settled (an abandoned call may still land).
  const done = (async () => {
    await Promise.all(clients);
    while (inFlight.size > 0) await Promise.all(inFlight);
  })();
  const settled = await clock.drive(done, options.release, options.hangMs);
  stopped = true;
  return { plan, keyPrefix: options.keyPrefix, keys, tokenLabels, calls, faults, settled };
}

function invoke(store: IdempotencyStore, key: string, call: StoreCall): Promise<StoreAnswer> {
  switch (call.method) {
    case 'claim':
      return store.claim(key, call.token, call.ms);
    case 'complete':
      return store.complete(key, call.token, call.ms);
    case 'release':
      return store.release(key, call.token).then(() => undefined);
    case 'renew': {
      if (typeof store.renew !== 'function') throw new TypeError('the store has no renew method');
      return store.renew(key, call.token, call.ms);
    }
  }
}

function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
