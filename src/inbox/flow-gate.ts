/**
 * The worker's flow control, whatever the engine: before a delivery's handlers run, a slot of its key
 * (`concurrencyPerKey`) and then one of the queue's rate (`rate`), both from the shared state
 * (`FlowControl`). An entry held back waits in its worker up to `holdMs`, then is deferred through
 * the engine (no attempt spent). The key's slot is renewed while the handlers run and given back
 * after.
 *
 * When the shared state cannot be reached (an error, or no answer within `callTimeoutMs`), the entry
 * is deferred, never run unthrottled: the limits exist to keep a downstream from refusing or banning
 * the account, the events are durable in the queue meanwhile, and waiting costs only latency. A
 * warning says so at most once a minute.
 */
import type { FlowControl, FlowGrant, InboxEntry, InboxRate, ThrottleReason } from 'service-webhooks/core';
import { Throttle } from './throttle.js';
import { waitUnlessAbandoned } from './wait-unless-abandoned.js';

/**
 * The flow-control settings a worker's options resolved to (`flowSettings` in `worker-options.ts`).
 *
 * @example
 * ```ts
 * const flow: FlowSettings = { backend, queue: 'inbox', rate: { max: 6, perMs: 1_000, marginMs: 50 }, perKey: undefined, holdMs: 2_000 };
 * ```
 */
export interface FlowSettings {
  readonly backend: FlowControl;
  /** Names the shared keys: every worker of one queue shares them. */
  readonly queue: string;
  readonly rate: Required<InboxRate> | undefined;
  readonly perKey:
    | { readonly key: (entry: InboxEntry) => string; readonly max: number; readonly leaseMs: number }
    | undefined;
  readonly holdMs: number;
  /** Bound of each call to the shared state. @default 2_000 */
  readonly callTimeoutMs?: number;
  /** How long an entry is deferred while the shared state is out of reach. @default 5_000 */
  readonly unavailableDelayMs?: number;
}

/**
 * What {@link FlowGate.admit} decided: run (and call `done` once the handlers settled), or defer.
 *
 * @example
 * ```ts
 * const admission = await gate.admit(entry, signal);
 * if (admission.kind === 'defer') await transport.defer(delivery, admission.delayMs, admission.reason);
 * ```
 */
export type Admission =
  | { readonly kind: 'run'; readonly done: () => void }
  | { readonly kind: 'defer'; readonly delayMs: number; readonly reason: ThrottleReason };

/** Polls of a busy key while an entry waits in its worker: short, since a slot frees when a run ends. */
const KEY_POLL_MS = 200;

/**
 * Admits deliveries under one worker's flow-control settings.
 *
 * @example
 * ```ts
 * const gate = new FlowGate(settings, (record, message) => logger.warn(record, message));
 * const admission = await gate.admit(delivery.entry, abandon);
 * ```
 */
export class FlowGate {
  readonly #settings: FlowSettings;
  readonly #warn: (record: Record<string, unknown>, message: string) => void;
  readonly #unavailable = new Throttle();
  readonly #keyTrouble = new Throttle();

  constructor(settings: FlowSettings, warn: (record: Record<string, unknown>, message: string) => void) {
    this.#settings = settings;
    this.#warn = warn;
  }

  /** Take the delivery's slots, waiting in place up to `holdMs`; `abandon` ends a wait (a close). */
  async admit(entry: InboxEntry | undefined, abandon: AbortSignal | undefined): Promise<Admission> {
    const { backend, queue, rate, perKey, holdMs } = this.#settings;
    const until = Date.now() + holdMs;
    const slot = perKey && entry ? this.#slotOf(entry) : undefined;
    const holder = crypto.randomUUID();
    let holding = false;
    const giveBack = (): void => {
      if (holding && slot) void this.#call(() => backend.releaseSlot(slot.key, holder)).catch(() => {});
      holding = false;
    };
    try {
      if (slot) {
        const grant = await this.#wait(
          () => backend.acquireSlot(slot.key, holder, slot.max, slot.leaseMs),
          until,
          abandon,
          KEY_POLL_MS,
        );
        if (!grant.granted) return { kind: 'defer', delayMs: jittered(grant.waitMs), reason: 'key' };
        holding = true;
      }
      if (rate) {
        const windowMs = rate.perMs + rate.marginMs;
        const grant = await this.#wait(
          () => backend.acquireRate(`rate:${queue}`, rate.max, windowMs),
          until,
          abandon,
        );
        if (!grant.granted) {
          giveBack();
          return { kind: 'defer', delayMs: jittered(grant.waitMs), reason: 'rate' };
        }
      }
    } catch (error) {
      giveBack();
      if (this.#unavailable.open()) {
        this.#warn(
          { err: error },
          'webhook inbox: flow-control state unreachable; events are deferred, not run unthrottled',
        );
      }
      return {
        kind: 'defer',
        delayMs: jittered(this.#settings.unavailableDelayMs ?? 5_000),
        reason: 'unavailable',
      };
    }
    if (!slot || !holding) return { kind: 'run', done: () => {} };
    // Renewed every third of the lease while the handlers run; given back when they settled.
    const renewal = setInterval(() => {
      this.#call(() => backend.renewSlot(slot.key, holder, slot.leaseMs)).then(
        (renewed) => {
          if (!renewed && this.#keyTrouble.open())
            this.#warn({ key: slot.key }, 'webhook inbox: a key’s slot lease ended while its handlers ran');
        },
        () => {},
      );
    }, slot.leaseMs / 3);
    return {
      kind: 'run',
      done: () => {
        clearInterval(renewal);
        giveBack();
      },
    };
  }

  /** Ask until granted, sleeping the answer's wait (at most `pollMs`), while before `until`. */
  async #wait(
    ask: () => Promise<FlowGrant>,
    until: number,
    abandon: AbortSignal | undefined,
    pollMs = Number.POSITIVE_INFINITY,
  ): Promise<FlowGrant> {
    for (;;) {
      const grant = await this.#call(ask);
      if (grant.granted) return grant;
      const pause = Math.min(grant.waitMs, pollMs);
      if (Date.now() + pause > until || abandon?.aborted) return grant;
      // A little later than the slot frees, spread, so the waiting workers do not all ask at once.
      if (!(await waitUnlessAbandoned(pause + Math.random() * 20, abandon))) return grant;
    }
  }

  /** The key's slot settings, or none when the key function throws (said once a minute; run unkeyed). */
  #slotOf(entry: InboxEntry): { key: string; max: number; leaseMs: number } | undefined {
    const perKey = this.#settings.perKey!;
    try {
      const key = perKey.key(entry);
      if (typeof key !== 'string') throw new TypeError(`the key function returned ${typeof key}`);
      return { key: `key:${this.#settings.queue}:${key}`, max: perKey.max, leaseMs: perKey.leaseMs };
    } catch (error) {
      if (this.#keyTrouble.open())
        this.#warn(
          { err: error },
          'webhook inbox: concurrencyPerKey.key threw; the entry runs without a key slot',
        );
      return undefined;
    }
  }

  /** One call to the shared state, bounded: a backend that hangs is one that is down. */
  #call<T>(call: () => Promise<T>): Promise<T> {
    const timeoutMs = this.#settings.callTimeoutMs ?? 2_000;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the flow-control state did not answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
      call().then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });
  }
}

/** A deferral a fifth longer at most, so that the entries held back together do not return together. */
function jittered(ms: number): number {
  return Math.round(ms * (1 + 0.2 * Math.random()));
}
