/**
 * The inbox worker, one for every engine: it owns the loop (take deliveries while slots are free, run
 * each under its lease with `InboxRunner`), the monitor, the telemetry gauges, the start line and the
 * graceful close. An engine is an `InboxTransport`; `startInboxWorker`, `startPgBossWorker` and
 * `startSqsWorker` each build one and hand it here.
 */
import { setMaxListeners } from 'node:events';
import {
  formatDuration,
  type InboxGauges,
  type InboxLogger,
  type InboxLogRecord,
  type InboxMonitorOptions,
  type InboxStats,
  type Webhooks,
} from 'service-webhooks/core';
import { inboxLog } from './log.js';
import { InboxMonitor } from './monitor.js';
import { InboxRunner, type RunEnd, type RunnerSettings } from './runner.js';
import { Throttle } from './throttle.js';
import type { InboxDelivery, InboxTransport } from './transport.js';

/** The most `abort` listeners one run holds at once: its own, its wait to be due, its flow-control wait. */
const LISTENERS_PER_RUN = 3;

/**
 * The worker's settings, checked by the engine's start function.
 *
 * @example
 * ```ts
 * const settings: WorkerSettings = { concurrency: 10, attempts: 25, retries: schedule(undefined, WHAT), handlerTimeoutMs: undefined, acceptUnsealedEntries: false, monitor: monitorSettings(WHAT, undefined) };
 * ```
 */
export interface WorkerSettings extends RunnerSettings {
  /** Deliveries run at once. */
  readonly concurrency: number;
  /** `undefined`: `monitor: false`. */
  readonly monitor: Required<InboxMonitorOptions> | undefined;
}

/**
 * A running inbox worker over one transport. The public members are arrow functions, so they keep
 * working when taken off the object (`const { close } = worker`).
 *
 * @example
 * ```ts
 * const worker = new InboxWorkerCore(webhooks, transport, { concurrency: 10, attempts: 25, retries: schedule(undefined, 'mine'), handlerTimeoutMs: undefined, acceptUnsealedEntries: false, monitor: undefined }, logger);
 * process.once('SIGTERM', () => void worker.close());
 * ```
 */
export class InboxWorkerCore<D extends InboxDelivery> {
  /** The policy for one delivery; a push engine's processor calls {@link run}, which goes through it. */
  readonly runner: InboxRunner<D>;
  /** Resolves once the transport is ready and the worker takes deliveries; rejects when it cannot start. */
  readonly ready: Promise<void>;
  readonly #transport: InboxTransport<D>;
  readonly #settings: WorkerSettings;
  readonly #logger: InboxLogger | undefined;
  readonly #monitor: InboxMonitor | undefined;
  readonly #stopObserving: (() => void) | undefined;
  /** The runs in flight: a graceful close waits for them. */
  readonly #running = new Set<Promise<RunEnd>>();
  /** Aborted by close: no more receives. */
  readonly #stopping = new AbortController();
  /** Aborted by a forced close: nothing more is renewed or settled. */
  readonly #abandon = new AbortController();
  readonly #receiveTrouble = new Throttle();
  readonly #loop: Promise<void>;
  /** Wakes the loop: a slot freed, or close. */
  #wake: (() => void) | undefined;
  #closing: Promise<void> | undefined;

  constructor(
    webhooks: Webhooks,
    transport: InboxTransport<D>,
    settings: WorkerSettings,
    logger: InboxLogger | undefined,
  ) {
    this.#transport = transport;
    this.#settings = settings;
    this.#logger = logger;
    // Every run in flight listens for a forced close, and once more while it waits for its due time or
    // a flow-control slot: past ten runs Node would warn of a listener leak that is not one. Bounded
    // by what the runs can hold, not lifted, so that a real leak is still reported.
    setMaxListeners(LISTENERS_PER_RUN * settings.concurrency + 10, this.#abandon.signal);
    this.runner = new InboxRunner(webhooks, transport, settings, logger);
    this.ready = transport.ready ?? Promise.resolve();
    // An unhandled rejection here would end the process; the engine's waitUntilReady() reports it.
    this.ready.catch((error: unknown) =>
      this.log('error', { err: error }, 'webhook inbox worker cannot start'),
    );
    this.#loop = transport.receive
      ? this.ready.then(
          () => this.#receiveLoop(),
          () => undefined,
        )
      : Promise.resolve();
    this.#monitor =
      settings.monitor && new InboxMonitor(webhooks, transport.name, this.stats, settings.monitor, logger);
    // Read when the plug-in collects, so a worker without an exporter costs the queue nothing.
    this.#stopObserving = webhooks.telemetry?.observeInbox(this.#gauges);
    const { concurrency, attempts, retries } = settings;
    const retrySpanMs = retries.spanMs(attempts);
    this.log(
      'info',
      { concurrency, attempts, retrySpanMs },
      `webhook inbox worker started: ${attempts} attempts over about ${formatDuration(retrySpanMs)}`,
    );
  }

  /** Deliveries whose handlers run now. */
  get running(): number {
    return this.#running.size;
  }

  /** The inbox's figures now. */
  readonly stats = (): Promise<InboxStats> => this.#transport.stats();

  /** Run one delivery (a push engine's processor calls this; the loop does for a pull engine). */
  readonly run = (delivery: D): Promise<RunEnd> => {
    // A push engine records what its processor returns, whenever it returns: its runs are never
    // abandoned here (its own forced close stops waiting for them).
    const run = this.runner.run(delivery, this.#transport.receive ? this.#abandon.signal : undefined);
    this.#running.add(run);
    const settled = (): void => {
      this.#running.delete(run);
      this.#wake?.();
    };
    run.then(settled, settled);
    return run;
  };

  /**
   * Stop taking deliveries, wait for the running handlers to settle (each within its budget) and
   * their outcome to be recorded, then close the transport. `force` waits for none and records
   * nothing more: the running deliveries come back by the engine's lease, as after a crash.
   */
  readonly close = (force = false): Promise<void> => {
    if (force) this.#abandon.abort();
    this.#closing ??= (async () => {
      this.#monitor?.stop();
      // Before the transport closes: a collection after it would read a closed connection.
      this.#stopObserving?.();
      this.#stopping.abort();
      this.#wake?.();
      const settled = this.#abandon.signal.aborted ? Promise.resolve() : this.#settled();
      await Promise.all([this.#transport.close?.(force, settled), this.#loop]);
      // A forced close after a graceful one stops waiting here.
      await Promise.race([settled, aborted(this.#abandon.signal)]);
    })();
    return this.#closing;
  };

  /** A line on the worker's logger, with the queue's name. */
  log(level: 'info' | 'warn' | 'error', record: Record<string, unknown>, message: string): void {
    inboxLog(this.#logger, level, { inbox: this.#transport.name, ...record } as InboxLogRecord, message);
  }

  /** Every run in flight settled (runs that start meanwhile, from a push engine, too). */
  async #settled(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }

  /** The inbox's gauges for the telemetry plug-in, from the figures `stats()` reads. */
  readonly #gauges = async (): Promise<InboxGauges> => {
    const stats = await this.stats();
    return {
      queue: this.#transport.name,
      depth: stats.depth,
      oldestAgeSeconds: (stats.oldestWaitingMs ?? 0) / 1000,
      deadLetters: stats.deadLettered,
    };
  };

  /** Receive as many deliveries as there are free slots; wait when there are none or the queue is idle. */
  async #receiveLoop(): Promise<void> {
    const transport = this.#transport;
    const receive = transport.receive!.bind(transport);
    const { concurrency } = this.#settings;
    const stopping = this.#stopping.signal;
    while (!stopping.aborted) {
      const free = concurrency - this.#running.size;
      if (free <= 0) {
        await this.#sleep(Number.POSITIVE_INFINITY);
        continue;
      }
      let deliveries: readonly D[];
      try {
        deliveries = await receive(free, stopping);
      } catch (error) {
        if (stopping.aborted) break;
        if (this.#receiveTrouble.open()) {
          this.log(
            'warn',
            { err: error },
            transport.receiveTrouble ?? 'webhook inbox: cannot receive events; retrying',
          );
        }
        await this.#sleep(transport.receiveRetryMs ?? 1_000);
        continue;
      }
      // Received as a forced close began: left to come back by the engine's lease, unrun. Received
      // as a graceful one began: run, and the close waits for them.
      if (this.#abandon.signal.aborted) break;
      for (const delivery of deliveries) void this.run(delivery);
      const idleMs = transport.idleMs ?? 0;
      if (deliveries.length < free && idleMs > 0) await this.#sleep(idleMs);
    }
  }

  /** Wait `ms`, or until a slot frees up or the worker closes. */
  #sleep(ms: number): Promise<void> {
    if (this.#stopping.signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = Number.isFinite(ms) ? setTimeout(wake, ms) : undefined;
      const self = this;
      function wake(): void {
        clearTimeout(timer);
        if (self.#wake === wake) self.#wake = undefined;
        resolve();
      }
      this.#wake = wake;
    });
  }
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
