/**
 * The dead-letter list of an inbox: events that failed their last attempt, kept in BullMQ's failed
 * set. List them, inspect one, replay (the handlers run once more, even though the event's id was
 * seen), or remove. The CLI's `service-webhooks inbox` runs on this.
 */
import { createHash } from 'node:crypto';
import { type Job, Queue } from 'bullmq';
import { ConfigurationError, type InboxEntry } from 'service-webhooks/core';
import { type InboxConnection, type InboxLocation, location, openClient } from './connection.js';
import { DeadLetterError } from './errors.js';
import type { InboxBullQueue } from './inbox-queue.js';
import {
  DEFAULT_QUEUE_NAME,
  entryOf,
  type InboxJobData,
  type InboxJobName,
  jobData,
  jobOptions,
  replayJobId,
} from './job-data.js';
import { type InboxStats, inboxStats } from './stats.js';

/**
 * Options of {@link inboxAdmin}: where the inbox is (the same `queueName` and `prefix` as the door's).
 *
 * @example
 * ```ts
 * inboxAdmin({ connection: process.env.REDIS_URL!, queueName: 'billing-webhooks' });
 * ```
 */
export type InboxAdminOptions = InboxLocation &
  (
    | { readonly connection: InboxConnection; readonly queue?: undefined }
    | { readonly queue: Queue; readonly connection?: undefined }
  );

/**
 * One dead-lettered event.
 *
 * @example
 * ```ts
 * const letter = await admin.get(jobId);
 * console.log(letter?.eventId, letter?.attempts, letter?.lastError);
 * ```
 */
export interface DeadLetter {
  /** The job's id: what `get`, `replay` and `remove` take. */
  readonly jobId: string;
  readonly eventId: string;
  readonly eventType: string;
  /** The entry as the door wrote it: the event, when it was received, the secret that verified it. */
  readonly entry: InboxEntry;
  /** Attempts made, the last one included. */
  readonly attempts: number;
  /** `code: message` of the last failure (the handler's own message when it threw). */
  readonly lastError: string;
  /** The stacks of the latest failures, newest last. */
  readonly stacktrace: readonly string[];
  /** When the door received the event (Unix ms). */
  readonly receivedAt: number;
  /** When the event was written to the queue (Unix ms). */
  readonly enqueuedAt: number;
  /** When the last attempt started (Unix ms). */
  readonly lastAttemptAt: number | undefined;
  /** When it was dead-lettered (Unix ms). */
  readonly failedAt: number | undefined;
  /** On a replay that failed in turn, the job it replayed. */
  readonly replayOf: string | undefined;
}

/**
 * A page of the dead-letter list, newest first.
 *
 * @example
 * ```ts
 * for (let offset = 0; ; offset += 50) {
 *   const page = await admin.list({ offset, limit: 50 });
 *   if (page.items.length === 0) break;
 * }
 * ```
 */
export interface DeadLetterPage {
  readonly items: readonly DeadLetter[];
  /** Dead-lettered events in all, at the time of the listing. */
  readonly total: number;
  readonly offset: number;
}

/**
 * What a replay wrote.
 *
 * @example
 * ```ts
 * const { jobId, replayId } = await admin.replay(letter.jobId);
 * ```
 */
export interface Replay {
  /** The new job's id (`r.` and the replay id). */
  readonly jobId: string;
  /** The replay's id, under which `process` deduplicates this replay. */
  readonly replayId: string;
  readonly eventId: string;
  /** The dead-lettered job it replays (removed from the list). */
  readonly replayOf: string;
}

/**
 * The tools of one inbox: its figures and its dead-letter list.
 *
 * @example
 * ```ts
 * const admin = inboxAdmin({ connection: process.env.REDIS_URL! });
 * const { items } = await admin.list();
 * for (const letter of items) await admin.replay(letter.jobId);
 * await admin.close();
 * ```
 */
export interface InboxAdmin {
  readonly queue: InboxBullQueue;
  /** The inbox's figures now. */
  stats(): Promise<InboxStats>;
  /** A page of dead-lettered events, newest first. @default { offset: 0, limit: 20 } */
  list(page?: { readonly offset?: number; readonly limit?: number }): Promise<DeadLetterPage>;
  /** One dead-lettered event, or `undefined` when no dead-lettered job has this id. */
  get(jobId: string): Promise<DeadLetter | undefined>;
  /**
   * Replay a dead-lettered event: a new job runs its handlers once more (with a fresh attempt
   * budget), even though its id was seen, and the dead-lettered job leaves the list. The replay id
   * is derived from the dead-lettered job, so replaying one entry twice (a retried command) runs the
   * handlers once. Throws {@link DeadLetterError} when the job is missing or not dead-lettered.
   */
  replay(jobId: string): Promise<Replay>;
  /** Replay every dead-lettered event (at most `limit`); answers the replays made. */
  replayAll(options?: { readonly limit?: number }): Promise<readonly Replay[]>;
  /** Drop a dead-lettered event for good. Throws {@link DeadLetterError} when it is not one. */
  remove(jobId: string): Promise<void>;
  /** Close the queue and the client made from a URL (yours stay open). */
  close(): Promise<void>;
}

/**
 * The client made from a URL for admin work: a command fails rather than waiting forever while Redis
 * is unreachable. The client gives up after a few connection attempts instead of ioredis' default of
 * reconnecting forever, which BullMQ's first call would wait out.
 */
const ADMIN_CLIENT = {
  maxRetriesPerRequest: 1,
  connectTimeout: 5_000,
  commandTimeout: 15_000,
  retryStrategy: (times: number) => (times > 3 ? null : 250 * times),
} as const;

/**
 * Open the figures and dead-letter list of an inbox.
 *
 * @example
 * ```ts
 * import { inboxAdmin } from 'service-webhooks/bullmq';
 *
 * const admin = inboxAdmin({ connection: process.env.REDIS_URL! });
 * console.log(await admin.stats());
 * await admin.replayAll();
 * await admin.close();
 * ```
 */
export function inboxAdmin(options: InboxAdminOptions): InboxAdmin {
  const what = 'inboxAdmin()';
  let queue: InboxBullQueue;
  let closeClient: () => Promise<void> = async () => {};
  const ownsQueue = options?.queue === undefined;
  if (options?.queue !== undefined) {
    if (!(options.queue instanceof Queue))
      throw new ConfigurationError(`${what} \`queue\` must be a BullMQ Queue.`);
    queue = options.queue as InboxBullQueue;
  } else {
    const { queueName, prefix } = location(options ?? {}, DEFAULT_QUEUE_NAME, what);
    const opened = openClient(options?.connection, ADMIN_CLIENT, what);
    closeClient = opened.close;
    queue = new Queue<InboxJobData, unknown, InboxJobName>(queueName, {
      connection: opened.client,
      ...prefix,
    });
    queue.on('error', () => {});
  }

  const deadLettered = async (jobId: string): Promise<Job<InboxJobData, unknown, InboxJobName>> => {
    const job = await queue.getJob(jobId);
    if (!job) throw new DeadLetterError(jobId, undefined);
    const state = await job.getState();
    if (state !== 'failed') throw new DeadLetterError(jobId, state);
    return job;
  };

  const replay = async (job: Job<InboxJobData, unknown, InboxJobName>): Promise<Replay> => {
    const replayId = replayIdOf(job);
    const jobId = replayJobId(replayId);
    // Written before the dead letter is removed: a crash in between leaves both, and replaying the
    // dead letter again writes the same job id (BullMQ adds nothing) and the same replay id (the
    // handlers run once).
    await queue.add('replay', jobData(entryOf(job.data), { id: replayId, of: job.id! }), jobOptions(jobId));
    await job.remove();
    return { jobId, replayId, eventId: job.data.event.id, replayOf: job.id! };
  };

  return {
    queue,
    stats: () => inboxStats(queue),
    async list({ offset = 0, limit = 20 } = {}) {
      if (!Number.isSafeInteger(offset) || offset < 0)
        throw new RangeError(`offset must be a whole number ≥ 0; got ${offset}.`);
      if (!Number.isSafeInteger(limit) || limit < 1)
        throw new RangeError(`limit must be a whole number ≥ 1; got ${limit}.`);
      const [total, jobs] = await Promise.all([
        queue.getFailedCount(),
        // The failed set is ordered by when each job failed: descending lists the newest first.
        queue.getJobs(['failed'], offset, offset + limit - 1, false),
      ]);
      return { items: jobs.filter((job) => job !== undefined).map(toDeadLetter), total, offset };
    },
    async get(jobId) {
      const job = await queue.getJob(jobId);
      if (!job || (await job.getState()) !== 'failed') return undefined;
      return toDeadLetter(job);
    },
    async replay(jobId) {
      return replay(await deadLettered(jobId));
    },
    async replayAll({ limit = Number.POSITIVE_INFINITY } = {}) {
      const done: Replay[] = [];
      const seen = new Set<string>();
      // Each replay leaves the list, so the first page is read again until nothing new is on it.
      while (done.length < limit) {
        const jobs = (await queue.getJobs(['failed'], 0, 99, false)).filter(
          (job): job is Job<InboxJobData, unknown, InboxJobName> => job !== undefined && !seen.has(job.id!),
        );
        if (jobs.length === 0) break;
        for (const job of jobs) {
          if (done.length >= limit) break;
          seen.add(job.id!);
          done.push(await replay(job));
        }
      }
      return done;
    },
    async remove(jobId) {
      await (await deadLettered(jobId)).remove();
    },
    async close() {
      if (ownsQueue) await queue.close();
      await closeClient();
    },
  };
}

/**
 * The replay id of a dead-lettered job: a digest of its id and the moment it failed, so each
 * dead-lettering of an event has its own replay id (a replay that fails in turn is replayed afresh)
 * while replaying one dead letter twice gives the same. 22 characters: short enough that the store
 * key stays well within its 320 characters.
 */
function replayIdOf(job: Job): string {
  return createHash('sha256')
    .update(`${job.id}\n${job.finishedOn ?? job.timestamp}`)
    .digest('base64url')
    .slice(0, 22);
}

function toDeadLetter(job: Job<InboxJobData, unknown, InboxJobName>): DeadLetter {
  const data = job.data;
  // A job written by hand may hold no event; it is listed all the same, so it can be removed.
  const event = data?.event as Partial<InboxJobData['event']> | undefined;
  return {
    jobId: job.id!,
    eventId: typeof event?.id === 'string' ? event.id : '',
    eventType: typeof event?.type === 'string' ? event.type : '',
    entry: entryOf(data),
    attempts: job.attemptsMade,
    lastError: job.failedReason ?? '',
    stacktrace: job.stacktrace ?? [],
    receivedAt: data?.receivedAt,
    enqueuedAt: job.timestamp,
    lastAttemptAt: job.processedOn,
    failedAt: job.finishedOn,
    replayOf: data?.replay?.of,
  };
}
