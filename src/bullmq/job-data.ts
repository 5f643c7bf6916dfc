/**
 * What the inbox writes to BullMQ, in one place: the job's data, its names and ids, and the options
 * every job is added with, so the door, the worker and the dead-letter tools agree on them.
 */
import type { JobsOptions } from 'bullmq';
import type { InboxEntry } from 'service-webhooks/core';
import { carriedEntry, carriedFields } from '../inbox/entry-fields.js';
import { keyEncoder } from '../stores/store-encoding.js';

/**
 * The BullMQ queue the inbox uses unless `queueName` says otherwise.
 *
 * @example
 * ```ts
 * new Queue(DEFAULT_QUEUE_NAME, { connection }); // the queue bullmqInbox() writes to by default
 * ```
 */
export const DEFAULT_QUEUE_NAME = 'service-webhooks-inbox';

/**
 * The data of one inbox job: the entry as the door wrote it and, on a replay of a dead-lettered
 * event, the replay's id (under which the replay is itself deduplicated) and the job it replays.
 * Plain JSON, as BullMQ stores it.
 *
 * @example
 * ```ts
 * const data: InboxJobData = { event, receivedAt: Date.now(), secretIndex: 0 };
 * ```
 */
export interface InboxJobData extends InboxEntry {
  readonly replay?: {
    /** Passed to `webhooks.process` as `replayId`. */
    readonly id: string;
    /** The id of the dead-lettered job this one replays. */
    readonly of: string;
  };
}

/**
 * The job names: `event` for what the door wrote, `replay` for a replay of a dead-lettered event.
 *
 * @example
 * ```ts
 * if (job.name === 'replay') console.log('replay of', job.data.replay?.of);
 * ```
 */
export type InboxJobName = 'event' | 'replay';

/**
 * Custom BullMQ job ids may not contain `:` (nor look like an integer): `%` and `:` are escaped as
 * `%` and their hex code (unpaired surrogates as `%u` and theirs), so distinct dedup keys stay
 * distinct ids, and a prefix makes every id a non-integer.
 */
const encodeKey = keyEncoder(':');

/** The job id of an event the door wrote: `e.` and its dedup key, made job-id safe. */
export function eventJobId(key: string): string {
  return `e.${encodeKey(key)}`;
}

/** The job id of a replay: `r.` and the replay id. */
export function replayJobId(replayId: string): string {
  return `r.${replayId}`;
}

/** The backoff type of every inbox job: the worker's `backoff` option computes its delays. */
export const BACKOFF_TYPE = 'service-webhooks';

/**
 * Attempts as BullMQ counts them. The worker, not the job, owns the attempt limit (see
 * startInboxWorker's `attempts`): it fails the last attempt as unrecoverable itself, so the limit
 * can change with a worker's deploy, and the door never needs to know it.
 */
const UNLIMITED_ATTEMPTS = 2 ** 31 - 1;

/** The options every inbox job is added with. */
export function jobOptions(jobId: string): JobsOptions {
  return { jobId, attempts: UNLIMITED_ATTEMPTS, backoff: { type: BACKOFF_TYPE } };
}

/**
 * The entry as a job holds it: only the entry's fields, whatever else the object carries. The door's
 * `traceparent` rides along as it is, so the worker's run joins the delivery's trace (and a replay
 * links to it); only a string is kept, and one the plug-in cannot read is ignored there, never here.
 */
export function jobData(entry: InboxEntry, replay?: InboxJobData['replay']): InboxJobData {
  const data: InboxJobData = withTraceparent(carriedFields(entry), entry.traceparent);
  return replay === undefined ? data : { ...data, replay };
}

/**
 * The entry of a job's data, for `webhooks.process`. A job from a door of an older version, or written
 * by hand, may have no `traceparent` or some other value: the run then starts a trace of its own
 * rather than fail, since a trace is never a reason to dead-letter an event.
 */
export function entryOf(data: InboxJobData): InboxEntry {
  // BullMQ counts attempts in its own state (`attemptsMade`), so the data never carries an attempt:
  // one written into it is not read.
  return withTraceparent(carriedEntry(data), data?.traceparent);
}

function withTraceparent(entry: InboxEntry, traceparent: unknown): InboxEntry {
  return typeof traceparent === 'string' ? { ...entry, traceparent } : entry;
}
