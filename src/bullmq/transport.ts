/**
 * BullMQ as an inbox transport: a push engine. BullMQ's worker hands each job to its processor, which
 * runs it through the shared worker (`InboxWorkerCore.run`); the verdict goes back to BullMQ as what
 * the processor returns or throws: a result (done), `DelayedError` after `moveToDelayed` (a deferral),
 * a failure whose delay the backoff strategy reads (a retry; BullMQ counts the attempts), an
 * unrecoverable failure (a dead letter: BullMQ's failed set). BullMQ owns stalls, locks and
 * reconnections; what it decides by itself (a job that stalled too often) is reported here.
 */

import { DelayedError, type Job, Queue, UnrecoverableError, Worker } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import type { InboxStats, ProcessResult, Webhooks } from 'service-webhooks/core';
import { describeFailure } from '../inbox/attempt-outcome.js';
import type { Schedule } from '../inbox/backoff.js';
import { Throttle } from '../inbox/throttle.js';
import type { DeferReason, InboxDelivery, InboxTransport } from '../inbox/transport.js';
import type { InboxWorkerCore } from '../inbox/worker.js';
import { BackgroundErrors } from '../stores/background-errors.js';
import { EvictionGuard } from '../stores/redis-eviction.js';
import type { location, OpenedClient } from './connection.js';
import type { InboxBullQueue } from './inbox-queue.js';
import { entryOf, type InboxJobData, type InboxJobName } from './job-data.js';
import { inboxStats, redisOf, throttledKeys } from './stats.js';

type InboxJob = Job<InboxJobData, ProcessResult, InboxJobName>;

/**
 * A job handed to the processor, and what the processor is to tell BullMQ.
 *
 * @example
 * ```ts
 * const end = await core.run(delivery);
 * if (delivery.thrown) throw delivery.thrown; // DelayedError, a retry, a dead letter
 * ```
 */
export interface BullDelivery extends InboxDelivery {
  readonly job: InboxJob;
  readonly token: string | undefined;
  result?: ProcessResult;
  thrown?: Error;
}

/** Why an attempt failed, as BullMQ records it (`failedReason`, the stack), the core's error and the next delay. */
class AttemptFailedError extends Error {
  override name = 'AttemptFailedError';
  /** Read by the backoff strategy: the delay the worker chose. */
  readonly delayMs: number;
  constructor(error: unknown, delayMs: number) {
    const { message, stack } = describeFailure(error);
    super(message, { cause: error });
    this.delayMs = delayMs;
    if (stack !== undefined) this.stack = stack;
  }
}

/**
 * The last attempt's failure: unrecoverable for BullMQ, which then moves the job to the failed set
 * (the dead-letter list) instead of retrying it.
 */
class LastAttemptFailedError extends UnrecoverableError {
  constructor(error: unknown) {
    const { message, stack } = describeFailure(error);
    super(message);
    // BullMQ recognises the error by class or by this name; keep both.
    this.name = 'UnrecoverableError';
    this.cause = error;
    if (stack !== undefined) this.stack = stack;
  }
}

/**
 * What the transport is made with, checked by startInboxWorker().
 *
 * @example
 * ```ts
 * new BullTransport({ ...settings, name: options.name, what: 'startInboxWorker()' }, openClient(url, { maxRetriesPerRequest: null }, WHAT));
 * ```
 */
export interface BullTransportSettings {
  readonly queueName: string;
  readonly prefix: ReturnType<typeof location>['prefix'];
  readonly concurrency: number;
  readonly retries: Schedule;
  readonly lockDuration: number;
  readonly stalledInterval: number;
  readonly maxStalledCount: number;
  readonly keepCompleted: number;
  readonly closeTimeoutMs: number;
  readonly name: string | undefined;
  /** For error messages: `startInboxWorker()`. */
  readonly what: string;
}

/**
 * The BullMQ worker and queue behind `startInboxWorker`, as a transport of the shared worker.
 *
 * @example
 * ```ts
 * const transport = new BullTransport(settings, opened);
 * const core = new InboxWorkerCore(webhooks, transport, settings, logger);
 * transport.attach(core, webhooks);
 * ```
 */
export class BullTransport implements InboxTransport<BullDelivery> {
  readonly name: string;
  readonly redelivery = 'BullMQ runs the event again';
  readonly attemptTravels = false;
  readonly worker: Worker<InboxJobData, ProcessResult, InboxJobName>;
  readonly queue: InboxBullQueue;
  readonly #settings: BullTransportSettings;
  readonly #opened: OpenedClient;
  readonly #connectionTrouble = new Throttle();
  #core: InboxWorkerCore<BullDelivery> | undefined;

  constructor(settings: BullTransportSettings, opened: OpenedClient) {
    this.#settings = settings;
    this.#opened = opened;
    this.name = settings.queueName;
    const { queueName, prefix, retries } = settings;
    this.worker = new Worker<InboxJobData, ProcessResult, InboxJobName>(
      queueName,
      // Three parameters: BullMQ passes its abort signal only to a processor whose `length` is 3 or more.
      (job, token, signal) => this.#process(job, token, signal),
      {
        connection: opened.client,
        ...prefix,
        concurrency: settings.concurrency,
        lockDuration: settings.lockDuration,
        stalledInterval: settings.stalledInterval,
        maxStalledCount: settings.maxStalledCount,
        removeOnComplete: { count: settings.keepCompleted },
        settings: {
          // The delay the worker chose for this retry; BullMQ's own failures take the schedule's.
          backoffStrategy: (failedAttempts: number, _type?: string, error?: Error) =>
            error instanceof AttemptFailedError ? error.delayMs : retries.delayMs(failedAttempts),
        },
        ...(settings.name === undefined ? {} : { name: settings.name }),
      },
    );
    this.queue = new Queue<InboxJobData, unknown, InboxJobName>(queueName, {
      connection: opened.client,
      ...prefix,
    });
  }

  /**
   * The shared worker this transport runs jobs for, and reports to. Called right after the
   * constructor, in the same turn: BullMQ fetches no job before.
   */
  attach(core: InboxWorkerCore<BullDelivery>, webhooks: Webhooks): void {
    this.#core = core;
    this.worker.on('failed', (job, error) => this.#onFailed(job, error));
    this.worker.on('stalled', (jobId) => core.runner.abandonedRunAgain({ jobId }));
    this.worker.on('error', (error) => this.#onConnectionError(error));
    this.queue.on('error', (error) => this.#onConnectionError(error));
    this.#checkEviction(webhooks);
  }

  readonly stats = (): Promise<InboxStats> => inboxStats(this.queue);

  async acknowledge(delivery: BullDelivery, result: ProcessResult): Promise<void> {
    delivery.result = result;
  }

  async defer(delivery: BullDelivery, delayMs: number, reason?: DeferReason): Promise<void> {
    if (delivery.token === undefined)
      throw new Error('BullMQ gave the job no lock token; it cannot be deferred');
    const until = Date.now() + delayMs;
    // Counted for stats() until the job is due again (see throttledKeys).
    const key =
      reason === undefined || reason === 'held'
        ? undefined
        : throttledKeys(this.queue)[reason === 'downstream' ? 'rateLimited' : 'throttled'];
    if (key !== undefined) await (await redisOf(this.queue)).zadd(key, until, String(delivery.job.id));
    await delivery.job.moveToDelayed(until, delivery.token);
    delivery.thrown = new DelayedError();
  }

  async retry(delivery: BullDelivery, next: { delayMs: number; error: unknown }): Promise<void> {
    // BullMQ records the failure on the job and runs it again after the delay.
    delivery.thrown = new AttemptFailedError(next.error, next.delayMs);
  }

  async deadLetter(delivery: BullDelivery, failure: { error: unknown }): Promise<void> {
    delivery.thrown = new LastAttemptFailedError(failure.error);
  }

  /**
   * Stop taking jobs now; once the running handlers settled, BullMQ's own close has `closeTimeoutMs`
   * (it waits on Redis, which right after a restart could take over a minute): past it the
   * connections the worker made are dropped and a warning is logged.
   */
  async close(force: boolean, settled: Promise<unknown>): Promise<void> {
    const closed = (async () => {
      await this.worker.close(force);
      await this.queue.close();
      await this.#opened.close();
    })();
    const { closeTimeoutMs } = this.#settings;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = settled.then(
      () => new Promise<'late'>((resolve) => (timer = setTimeout(resolve, closeTimeoutMs, 'late'))),
    );
    const outcome = await Promise.race([closed.then(() => 'closed' as const), late]).finally(() =>
      clearTimeout(timer),
    );
    if (outcome === 'closed') return;
    closed.catch(() => {});
    this.#core?.log(
      'warn',
      { closeTimeoutMs },
      'webhook inbox: close took longer than closeTimeoutMs after the handlers settled (BullMQ waiting on Redis); its connections were dropped',
    );
    this.#cut();
  }

  /** BullMQ's processor: one attempt at a queued event, through the shared worker. */
  async #process(job: InboxJob, token?: string, signal?: AbortSignal): Promise<ProcessResult> {
    const delivery: BullDelivery = { ...deliveryOf(job, job.attemptsMade + 1), job, token, signal };
    const end = await this.#core!.run(delivery);
    if (end.kind === 'unsettled') throw end.error;
    if (delivery.thrown) throw delivery.thrown;
    return delivery.result!;
  }

  /**
   * A failure the worker did not judge (its own are reported already): BullMQ failed the job by
   * itself, a job that stalled more than `maxStalledCount` times (dead-lettered), or a processor whose
   * deferral could not be written (retried on the schedule).
   */
  #onFailed(job: InboxJob | undefined, error: Error): void {
    // `job` is missing only when a removeOnFail option dropped it: the worker sets none.
    if (!job || error instanceof AttemptFailedError || error instanceof LastAttemptFailedError) return;
    const runner = this.#core!.runner;
    const delivery = deliveryOf(job, job.attemptsMade);
    const cause = (error as { cause?: unknown }).cause ?? error;
    if (job.finishedOn === undefined) runner.attemptFailed(delivery, cause, job.delay);
    else
      runner.deadLettered(
        delivery,
        cause,
        'crashed',
        'webhook inbox: event dead-lettered after its last attempt',
      );
  }

  /** Connection trouble comes as `error` events, one per reconnection attempt: say it once a minute. */
  #onConnectionError(error: Error): void {
    if (!this.#connectionTrouble.open()) return;
    this.#core?.log(
      'warn',
      { err: error },
      'webhook inbox: Redis connection error (BullMQ reconnects by itself)',
    );
  }

  /** Drop every connection the worker made, now: BullMQ's own (the blocking one among them) and ours. */
  #cut(): void {
    for (const backend of [this.worker, this.queue]) {
      // BullMQ's disconnect waits for each connection's end; nothing here waits for it.
      backend.disconnect().catch(() => {});
    }
    this.#opened.cut();
  }

  /**
   * An evicting Redis loses queued events; the door refuses to queue on one, and the worker says so
   * (to onError and its log) rather than leave BullMQ's console warning as the only sign.
   */
  #checkEviction(webhooks: Webhooks): void {
    const eviction = new BackgroundErrors();
    eviction.listen((error) => {
      this.#core?.log('error', { err: error }, 'webhook inbox: the queue’s Redis may evict jobs');
      webhooks.report(error);
    });
    this.queue
      .waitUntilReady()
      .then(() => this.queue.getBackend().client)
      .then((client) =>
        new EvictionGuard(
          client as unknown as Redis | Cluster,
          this.#settings.what,
          'report',
          eviction,
        ).check(),
      )
      .catch(() => {
        // Not connected: the worker's own connection errors say so; nothing to check yet.
      });
  }
}

/** How the shared worker sees a job: `attempt` is the one that runs (or, for a failure, that failed). */
function deliveryOf(job: InboxJob, attempt: number): InboxDelivery {
  return {
    entry: entryOf(job.data),
    attempt,
    replayId: job.data?.replay?.id,
    ids: { jobId: job.id },
    unnamed: `(job ${job.id})`,
  };
}
