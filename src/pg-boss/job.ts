/**
 * What the inbox writes to pg-boss, in one place: the job's data, its deterministic ids, the queue
 * names and settings, and the few pg-boss calls the door, the worker and the admin share.
 */
import { createHash } from 'node:crypto';
import type { InboxEntry } from 'service-webhooks/core';
import { ConfigurationError } from 'service-webhooks/core';
import { carriedEntry, carriedFields } from '../inbox/entry-fields.js';

/**
 * The pg-boss queue the inbox uses unless `queue` says otherwise.
 *
 * @example
 * ```ts
 * await boss.getQueue(DEFAULT_PG_BOSS_QUEUE); // the queue pgBossInbox() writes to by default
 * ```
 */
export const DEFAULT_PG_BOSS_QUEUE = 'service-webhooks-inbox';

/**
 * The part of a pg-boss instance the inbox uses. Typed here, by shape, so that the inbox takes the
 * `PgBoss` of any version whose calls have these forms (the tests run pg-boss 10; 11 and 12 keep them),
 * and so that no pg-boss type leaks into the package's declarations.
 *
 * @example
 * ```ts
 * import PgBoss from 'pg-boss';
 * const boss: PgBossLike = new PgBoss(process.env.DATABASE_URL!);
 * ```
 */
export interface PgBossLike {
  createQueue(name: string, options?: object): Promise<unknown>;
  updateQueue(name: string, options?: object): Promise<unknown>;
  getQueue(name: string): Promise<unknown>;
  send(name: string, data: object, options: object): Promise<string | null>;
  // biome-ignore lint/suspicious/noExplicitAny: pg-boss's overloads differ between versions; the inbox reads the rows through PgBossJob.
  fetch(name: string, options: any): Promise<any>;
  // biome-ignore lint/suspicious/noExplicitAny: as above.
  complete(name: string, id: string, data?: any, options?: any): Promise<unknown>;
  deleteJob(name: string, id: string): Promise<unknown>;
  // biome-ignore lint/suspicious/noExplicitAny: as above.
  getJobById(name: string, id: string, options?: any): Promise<any>;
  getDb(): { executeSql(text: string, values?: unknown[]): Promise<{ rows: unknown[] }> };
}

/**
 * A job as `fetch(…, { includeMetadata: true })` and `getJobById` return it: the fields the inbox reads.
 *
 * @example
 * ```ts
 * const [job] = (await boss.fetch(queue, { includeMetadata: true })) as PgBossJob[];
 * ```
 */
export interface PgBossJob {
  readonly id: string;
  readonly name: string;
  readonly data: InboxJobData;
  readonly state?: string;
  /** Times pg-boss handed the job out again after it expired in `active` (a worker that died). */
  readonly retryCount?: number;
  readonly createdOn?: Date | string;
  readonly startedOn?: Date | string | null;
  readonly completedOn?: Date | string | null;
  readonly output?: unknown;
}

/**
 * The data of one inbox job: the entry as the door wrote it, and the worker's own bookkeeping. Every
 * count lives here, not in pg-boss's `retry_count`, because pg-boss counts an expiration (a worker
 * that died) as a retry, and a crash must not spend one of the event's attempts.
 *
 * @example
 * ```ts
 * const data: InboxJobData = { event, receivedAt: Date.now(), secretIndex: 0, attempt: 1 };
 * ```
 */
export interface InboxJobData extends InboxEntry {
  /** This job's attempt at the event, from 1; advanced only by a failed attempt, never by a crash or a deferral. */
  readonly attempt?: number;
  /** Deferrals within this attempt (the event was held by another run): part of the next job's id. */
  readonly deferrals?: number;
  /**
   * Why this job was deferred by flow control (`rate`, `key`, `unavailable`, or `downstream` for a
   * handler's `RateLimitedError`): what the figures count as throttled and rate limited.
   */
  readonly throttled?: string;
  /** Workers that died running this event, over every job of its chain: bounded by `maxCrashes`. */
  readonly crashes?: number;
  /** The id of the chain's first job (the door's): the ids of its retries derive from it. */
  readonly root?: string;
  /** On a replay of a dead letter: the replay's id (`process`'s `replayId`) and the dead letter replayed. */
  readonly replay?: { readonly id: string; readonly of: string };
  /** On a dead letter: why, and when. */
  readonly deadLetter?: DeadLetterRecord;
}

/**
 * What the worker writes with a dead letter: the last failure as the admin shows it.
 *
 * @example
 * ```ts
 * const record: DeadLetterRecord = { lastError: 'handler_failed: boom', stacktrace: [], attempts: 3, failedAt: Date.now(), of: jobId, enqueuedAt: Date.now() };
 * ```
 */
export interface DeadLetterRecord {
  readonly lastError: string;
  readonly stacktrace: readonly string[];
  readonly attempts: number;
  readonly failedAt: number;
  /** The id of the job that failed for the last time. */
  readonly of: string;
  /** When that job's chain was written by the door. */
  readonly enqueuedAt: number;
  readonly lastAttemptAt?: number | undefined;
}

/**
 * The dead-letter queue of an inbox queue: pg-boss's `deadLetter` queue, which no worker takes from.
 *
 * @example
 * ```ts
 * deadLetterQueueOf('billing-webhooks'); // 'billing-webhooks-dead-letters'
 * ```
 */
export function deadLetterQueueOf(queue: string): string {
  return `${queue}-dead-letters`;
}

/**
 * Check a queue name as pg-boss 12 takes them (letters, digits, `_`, `-`, `.`, `/`), at construction.
 *
 * @example
 * ```ts
 * const queue = checkQueueName(options.queue, 'pgBossInbox()');
 * ```
 */
export function checkQueueName(queue: unknown, what: string): string {
  if (queue === undefined) return DEFAULT_PG_BOSS_QUEUE;
  if (typeof queue !== 'string' || !/^[A-Za-z0-9_\-./]{1,200}$/.test(queue)) {
    throw new ConfigurationError(
      `${what} \`queue\` must be a pg-boss queue name (letters, digits, _ - . /, at most 200); got ${JSON.stringify(queue)}.`,
    );
  }
  return queue;
}

/**
 * Check that `boss` is a pg-boss instance (by the calls the inbox makes).
 *
 * @example
 * ```ts
 * const boss = checkBoss(options.boss, 'pgBossInbox()');
 * ```
 */
export function checkBoss(boss: unknown, what: string): PgBossLike {
  const calls = [
    'createQueue',
    'getQueue',
    'send',
    'fetch',
    'complete',
    'getJobById',
    'deleteJob',
    'getDb',
  ] as const;
  if (
    typeof boss !== 'object' ||
    boss === null ||
    calls.some((call) => typeof (boss as Record<string, unknown>)[call] !== 'function')
  ) {
    throw new ConfigurationError(
      `${what} needs \`boss\`: a started pg-boss instance (new PgBoss(…), then start()).`,
    );
  }
  return boss as PgBossLike;
}

/**
 * A UUID from a digest of `parts`: pg-boss ids are UUIDs and dedup keys reach 400 characters, so the
 * id is derived (SHA-256, shaped as a version-5-style UUID): one key always gives one id, and a second
 * `send` with it adds nothing while the first job is in pg-boss's job table.
 *
 * @example
 * ```ts
 * derivedUuid('event', queue, key); // the same UUID for the same parts, every time
 * ```
 */
export function derivedUuid(...parts: readonly string[]): string {
  const bytes = createHash('sha256').update(parts.join('\n')).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The id of the job the door writes for an event: from the queue and the event's dedup key.
 *
 * @example
 * ```ts
 * await boss.getJobById(queue, eventJobId(queue, key));
 * ```
 */
export function eventJobId(queue: string, key: string): string {
  return derivedUuid('event', queue, key);
}

/**
 * The id of the job that continues a chain (a retry or a deferral): one per attempt and deferral.
 *
 * @example
 * ```ts
 * await boss.send(queue, data, { id: continuationJobId(root, attempt + 1, 0), startAfter });
 * ```
 */
export function continuationJobId(root: string, attempt: number, deferrals: number): string {
  return derivedUuid('continue', root, String(attempt), String(deferrals));
}

/**
 * The id of the dead letter a job becomes: one per failed job, so a second write adds nothing.
 *
 * @example
 * ```ts
 * await boss.send(deadLetterQueueOf(queue), letter, { id: deadLetterJobId(job.id) });
 * ```
 */
export function deadLetterJobId(jobId: string): string {
  return derivedUuid('dead-letter', jobId);
}

/**
 * The id of a replay's job: from the replay id, so replaying one dead letter twice writes one job.
 *
 * @example
 * ```ts
 * await boss.send(queue, data, { id: replayJobId(queue, replayIdOf(letter.jobId, letter.failedAt)) });
 * ```
 */
export function replayJobId(queue: string, replayId: string): string {
  return derivedUuid('replay', queue, replayId);
}

/**
 * The entry as a job holds it: only the entry's fields. The door's `traceparent` rides along as it is.
 *
 * @example
 * ```ts
 * await boss.send(queue, jobData(entry, { attempt: 1 }), { id: eventJobId(queue, key) });
 * ```
 */
export function jobData(
  entry: InboxEntry,
  extra: Omit<InboxJobData, Exclude<keyof InboxEntry, 'attempt'>> = {},
): InboxJobData {
  const data: { -readonly [K in keyof InboxJobData]: InboxJobData[K] } = carriedFields(entry);
  if (typeof entry.traceparent === 'string') data.traceparent = entry.traceparent;
  // A new attempt count (the door's 1, a replay's) leaves the entry's sealed attempt behind.
  if (extra.attempt === undefined && entry.attempt !== undefined) {
    data.attempt = entry.attempt;
    if (typeof entry.attemptSeal === 'string') data.attemptSeal = entry.attemptSeal;
  }
  return { ...data, ...extra };
}

/**
 * The entry of a job's data, for `webhooks.process`; whatever else the data holds stays out.
 *
 * @example
 * ```ts
 * await webhooks.process(entryOf(job.data), { attempt: job.data.attempt ?? 1 });
 * ```
 */
export function entryOf(data: InboxJobData | undefined): InboxEntry {
  const entry = carriedEntry(data);
  if (typeof data?.traceparent === 'string') entry.traceparent = data.traceparent;
  // Carried as they are, whatever they are: `process` checks them against the seals.
  if (data?.attempt !== undefined) entry.attempt = data.attempt;
  if (data?.attemptSeal !== undefined) entry.attemptSeal = data.attemptSeal;
  return entry;
}

/**
 * The queue settings the inbox runs on. pg-boss's `retryLimit` bounds only its own recoveries of a job
 * whose worker died (its expiration path): the worker's attempts never go through pg-boss's retries.
 * `retryDelay: 0`: a dead worker's job is free again as soon as it expired; the store's lease holds it
 * until the dead run's claim ends.
 *
 * @example
 * ```ts
 * await ensureQueues(boss, queue, { expireInSeconds: 900, maxCrashes: 5 });
 * ```
 */
export interface QueueSettings {
  readonly expireInSeconds: number;
  readonly maxCrashes: number;
}

/**
 * The settings a door uses when it makes the queue itself (a worker writes its own over them).
 *
 * @example
 * ```ts
 * await ensureQueues(boss, queue, DEFAULT_QUEUE_SETTINGS);
 * ```
 */
export const DEFAULT_QUEUE_SETTINGS: QueueSettings = { expireInSeconds: 900, maxCrashes: 5 };

/**
 * Make the dead-letter queue, then the inbox queue pointing at it (creating is a no-op for a queue
 * that exists); `update` writes `settings` over an existing queue's.
 *
 * @example
 * ```ts
 * await ensureQueues(boss, 'billing-webhooks', { expireInSeconds: 900, maxCrashes: 5 }, true);
 * ```
 */
export async function ensureQueues(
  boss: PgBossLike,
  queue: string,
  settings: QueueSettings,
  update = false,
): Promise<void> {
  const deadLetter = deadLetterQueueOf(queue);
  await createQueue(boss, deadLetter, {});
  const options = {
    deadLetter,
    // One more than the worker's bound: the worker sees the crash count pass `maxCrashes` on the next
    // fetch and dead-letters the event itself, reporting it; pg-boss's own move to the dead-letter
    // queue is the backstop for a run that crashes that worker too.
    retryLimit: settings.maxCrashes + 1,
    retryDelay: 0,
    retryBackoff: false,
    expireInSeconds: settings.expireInSeconds,
  };
  await createQueue(boss, queue, options);
  if (update) await boss.updateQueue(queue, options);
}

/**
 * Create a queue unless it exists. pg-boss 10's creation takes locks in an order that deadlocks when
 * several processes create one queue at once (workers starting together): a failed attempt is
 * retried while the queue is still missing.
 */
async function createQueue(boss: PgBossLike, name: string, options: object): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    if (await boss.getQueue(name)) return;
    try {
      await boss.createQueue(name, options);
      return;
    } catch (error) {
      if (attempt >= 5 || (await boss.getQueue(name))) {
        if (await boss.getQueue(name)) return;
        throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 100 * attempt));
    }
  }
}
