/**
 * The dead-letter list of an inbox: events that failed their last attempt, kept in BullMQ's failed
 * set. List them, inspect one, replay (the handlers run once more, even though the event's id was
 * seen), or remove. The CLI's `service-webhooks inbox` runs on this.
 */
import { type Job, Queue } from 'bullmq';
import type { DeadLetter, InboxAdmin, Replay } from 'service-webhooks/core';
import { ConfigurationError, DeadLetterError } from 'service-webhooks/core';
import { checkPage, replayEach, replayIdOf } from '../inbox/dead-letters.js';
import { type InboxConnection, type InboxLocation, location, openClient } from './connection.js';
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
import { inboxStats } from './stats.js';

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
 * The tools of a BullMQ inbox: its figures and its dead-letter list (see `InboxAdmin`), and its queue.
 *
 * @example
 * ```ts
 * const admin = inboxAdmin({ connection: process.env.REDIS_URL! });
 * const { items } = await admin.list();
 * for (const letter of items) await admin.replay(letter.jobId);
 * await admin.close();
 * ```
 */
export interface BullmqInboxAdmin extends InboxAdmin {
  readonly engine: 'bullmq';
  /** The BullMQ queue it reads. */
  readonly queue: InboxBullQueue;
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
export function inboxAdmin(options: InboxAdminOptions): BullmqInboxAdmin {
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
    const replayId = replayIdOf(job.id!, job.finishedOn ?? job.timestamp);
    const jobId = replayJobId(replayId);
    // Written before the dead letter is removed: a crash in between leaves both, and replaying the
    // dead letter again writes the same job id (BullMQ adds nothing) and the same replay id (the
    // handlers run once).
    await queue.add('replay', jobData(entryOf(job.data), { id: replayId, of: job.id! }), jobOptions(jobId));
    await job.remove();
    return { jobId, replayId, eventId: job.data.event.id, replayOf: job.id! };
  };

  return {
    engine: 'bullmq',
    queue,
    stats: () => inboxStats(queue),
    async list(page) {
      const { offset, limit } = checkPage(page);
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
    replayAll: ({ limit } = {}) =>
      replayEach(
        async () => (await queue.getJobs(['failed'], 0, 99, false)).filter((job) => job !== undefined),
        (job) => job.id!,
        replay,
        limit,
      ),
    async remove(jobId) {
      await (await deadLettered(jobId)).remove();
    },
    async close() {
      if (ownsQueue) await queue.close();
      await closeClient();
    },
  };
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
