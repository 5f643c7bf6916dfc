/**
 * pg-boss as an inbox transport: a pull engine. `fetch` takes jobs (pg-boss's `expireInSeconds` is
 * the lease); the attempt count and schedule are the worker's, kept in the job's data, so a deferral
 * or a retry writes the next job of the chain (due at its time, with a derived id) and completes this
 * one, and a dead letter is a job of the `<queue>-dead-letters` queue. pg-boss's own retries count
 * only the recoveries of a job whose worker died (`crashes`).
 */
import type { InboxStats } from 'service-webhooks/core';
import type { DeadLetter, DeferReason, InboxDelivery, InboxTransport } from '../inbox/transport.js';
import {
  continuationJobId,
  deadLetterJobId,
  deadLetterQueueOf,
  entryOf,
  type InboxJobData,
  type PgBossJob,
  type PgBossLike,
} from './job.js';
import { pgBossInboxStats } from './stats.js';

/**
 * A fetched job, as the shared worker runs it: the attempt and crashes from the job's data.
 *
 * @example
 * ```ts
 * const [delivery] = await transport.receive(1); // delivery.job.id, delivery.attempt, delivery.crashes
 * ```
 */
export interface PgBossDelivery extends InboxDelivery {
  readonly job: PgBossJob;
  readonly data: InboxJobData;
  readonly crashes: number;
}

/**
 * The queue and how to poll it, checked by startPgBossWorker().
 *
 * @example
 * ```ts
 * new PgBossTransport({ boss, queue: 'service-webhooks-inbox', schema: 'pgboss', pollIntervalMs: 500 });
 * ```
 */
export interface PgBossTransportSettings {
  readonly boss: PgBossLike;
  readonly queue: string;
  readonly schema: string;
  readonly pollIntervalMs: number;
}

/**
 * The transport behind `startPgBossWorker`.
 *
 * @example
 * ```ts
 * const core = new InboxWorkerCore(webhooks, new PgBossTransport(settings), settings, logger);
 * ```
 */
export class PgBossTransport implements InboxTransport<PgBossDelivery> {
  readonly name: string;
  readonly redelivery = 'pg-boss will hand the event out again';
  readonly receiveTrouble = 'webhook inbox: could not fetch events from PostgreSQL; retrying';
  readonly receiveRetryMs: number;
  readonly idleMs: number;
  readonly attemptTravels = true;
  readonly #boss: PgBossLike;
  readonly #schema: string;

  constructor(settings: PgBossTransportSettings) {
    this.name = settings.queue;
    this.#boss = settings.boss;
    this.#schema = settings.schema;
    this.receiveRetryMs = settings.pollIntervalMs;
    this.idleMs = settings.pollIntervalMs;
  }

  readonly stats = (): Promise<InboxStats> => pgBossInboxStats(this.#boss, this.name, this.#schema);

  async receive(max: number): Promise<PgBossDelivery[]> {
    const jobs = (await this.#boss.fetch(this.name, { batchSize: max, includeMetadata: true })) ?? [];
    return (jobs as PgBossJob[]).map(deliveryOf);
  }

  async acknowledge(delivery: PgBossDelivery): Promise<void> {
    await this.#boss.complete(this.name, delivery.job.id);
  }

  async defer(delivery: PgBossDelivery, delayMs: number, reason?: DeferReason): Promise<void> {
    const { throttled: _before, ...data } = delivery.data;
    const { attempt } = delivery;
    const root = rootOf(delivery);
    const deferrals = positiveOr(data.deferrals, 0, 0) + 1;
    await this.#continue(
      delivery,
      {
        ...data,
        crashes: delivery.crashes,
        root,
        attempt,
        deferrals,
        ...(reason === undefined || reason === 'held' ? {} : { throttled: reason }),
      },
      continuationJobId(root, attempt, deferrals),
      delayMs,
    );
  }

  async retry(
    delivery: PgBossDelivery,
    next: { attempt: number; delayMs: number; attemptSeal: string | undefined },
  ): Promise<void> {
    const root = rootOf(delivery);
    const { attemptSeal: _previous, throttled: _throttled, ...rest } = delivery.data;
    const { attemptSeal } = next;
    await this.#continue(
      delivery,
      {
        ...rest,
        crashes: delivery.crashes,
        ...(attemptSeal === undefined ? {} : { attemptSeal }),
        root,
        attempt: next.attempt,
        deferrals: 0,
      },
      continuationJobId(root, next.attempt, 0),
      next.delayMs,
    );
  }

  /** The dead letter (a job of the dead-letter queue, with the cause), then the end of this job. */
  async deadLetter(delivery: PgBossDelivery, failure: DeadLetter): Promise<void> {
    const { job } = delivery;
    // A crashed event's letter keeps the data it was handed out with.
    const data =
      failure.reason === 'crashed' ? delivery.data : { ...delivery.data, crashes: delivery.crashes };
    const { deadLetter: _previous, deferrals: _d, throttled: _t, ...kept } = data;
    const letter: InboxJobData = {
      ...kept,
      root: rootOf(delivery),
      deadLetter: {
        lastError: failure.message,
        stacktrace: failure.stack === undefined ? [] : [failure.stack],
        attempts: failure.attempt,
        failedAt: Date.now(),
        of: job.id,
        enqueuedAt: timeOf(job.createdOn) ?? Date.now(),
        ...(job.startedOn ? { lastAttemptAt: timeOf(job.startedOn) } : {}),
      },
    };
    // Dead letters stay until replayed or removed: ten years is pg-boss's way of saying so.
    await this.#boss.send(deadLetterQueueOf(this.name), letter, {
      id: deadLetterJobId(job.id),
      retentionSeconds: 10 * 365 * 86_400,
    });
    await this.#boss.complete(this.name, job.id);
  }

  /**
   * The next job of the chain, then the end of this one. Two writes, in this order: a crash between
   * them leaves both, and this job, expired, runs again as the same attempt and writes the same next
   * job (same id: nothing added); the store's claim keeps the handlers from completing twice.
   */
  async #continue(delivery: PgBossDelivery, data: InboxJobData, id: string, delayMs: number): Promise<void> {
    const { deadLetter: _none, ...next } = data;
    await this.#boss.send(this.name, next, { id, startAfter: new Date(Date.now() + delayMs) });
    await this.#boss.complete(this.name, delivery.job.id);
  }
}

function deliveryOf(job: PgBossJob): PgBossDelivery {
  const data = (job.data ?? {}) as InboxJobData;
  const recoveries = positiveOr(job.retryCount, 0, 0);
  return {
    job,
    data,
    entry: entryOf(data),
    attempt: positiveOr(data.attempt, 1),
    replayId: data.replay?.id,
    ids: { jobId: job.id },
    unnamed: `(job ${job.id})`,
    crashes: positiveOr(data.crashes, 0, 0) + recoveries,
    recovered: recoveries > 0,
  };
}

function rootOf(delivery: PgBossDelivery): string {
  return delivery.data.root ?? delivery.job.id;
}

function positiveOr(value: unknown, fallback: number, min = 1): number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min ? value : fallback;
}

function timeOf(value: Date | string | null | undefined): number | undefined {
  if (value === null || value === undefined) return undefined;
  const time = new Date(value).getTime();
  return Number.isNaN(time) ? undefined : time;
}
