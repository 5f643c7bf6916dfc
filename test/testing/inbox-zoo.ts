/**
 * A zoo of inbox engines for inboxConformanceSuite's self-test: an in-memory engine that keeps the
 * whole contract (the reference), and the same engine with one realistic bug each. Every backend
 * request is a round trip (a macrotask, as network I/O is), so concurrent calls interleave as they
 * do against a real queue. The engine's worker judges each run with the shared `judgeFailure`, as
 * the real engines do.
 *
 * Used by inbox-zoo.test.ts, which checks that the suite passes the reference and catches each bug
 * under the rule it breaks.
 */
import { createHash, randomUUID } from 'node:crypto';
import {
  type DeadLetter,
  DeadLetterError,
  EventDeadLetteredError,
  type InboxAdmin,
  type InboxEntry,
  type InboxQueue,
  type InboxStats,
  type Replay,
  type WebhookEvent,
  type Webhooks,
} from 'service-webhooks';
import type {
  InboxRule,
  InboxUnderTest,
  WorkerUnderTest,
  WorkerUnderTestOptions,
} from 'service-webhooks/testing';
import { describeFailure, judgeFailure } from '../../src/inbox/attempt-outcome.js';
import { schedule } from '../../src/inbox/backoff.js';
import { checkPage, replayIdOf } from '../../src/inbox/dead-letters.js';

/**
 * The zoo's bugs, one per engine, each with the rule of the contract it breaks (what the suite
 * must name when it catches it).
 *
 * @example
 * ```ts
 * INBOX_FLAWS['never dead-letters']; // 'deadLetter'
 * ```
 */
// One bug each, and the rule of the contract it breaks (what the suite must name). */
export const INBOX_FLAWS = {
  /** Batches writes: `enqueue` resolves at once and the entry is written with the next one, so the last is lost. */
  'acknowledges before the write lands': 'durable',
  /** Its client queues writes while disconnected and resolves them: a down backend still says "done". */
  'acknowledges while its backend is down': 'durable',
  /** Adds a job per enqueue, whatever the key (a queue without deduplication ids). */
  'a second enqueue of one key adds a second entry': 'dedupe',
  /** Takes a batch of twice its concurrency, runs what fits, and acknowledges the rest unrun. */
  'acknowledges the part of a batch it could not run': 'exactlyOnce',
  /** A failed attempt goes straight back to the queue: the backoff is read but never applied. */
  'retries at once, ignoring the schedule': 'schedule',
  /** An abandoned entry is handed out again with its attempt counted, as BullMQ's `attemptsMade` would be if stalls counted. */
  'recovering a crashed worker spends an attempt': 'crash',
  /** An abandoned entry (its worker's lock ended) is taken for finished and dropped. */
  'loses the entries of a crashed worker': 'crash',
  /** After the last attempt, the entry is dropped rather than dead-lettered. */
  'never dead-letters': 'deadLetter',
  /** Dead-letters, but keeps no `lastError`. */
  'dead-letters without the cause': 'deadLetter',
  /** Dead-letters without telling onError (no EventDeadLetteredError). */
  'dead-letters silently': 'deadLetter',
  /** Each replay gets a fresh random replay id, so two replays of one dead letter both run. */
  'a replay makes a fresh replay id each time': 'replay',
  /** Poison goes through the schedule like any failure, spending every attempt. */
  'retries poison entries': 'poison',
  /** `remove` answers but leaves the dead letter in the list. */
  'remove keeps the dead letter': 'admin',
  /** Its worker runs entries without a seal (`acceptUnsealedEntries` left on after an upgrade, or on by default). */
  'runs unsealed entries': 'forged',
  /** Stores the entry's fields it knew before seals (event, receivedAt, secretIndex) and drops the seal. */
  'drops the seal': 'forged',
  /** Stores the fields it knew before tenants, seal and trace context included, and drops `tenant`. */
  'drops the tenant': 'tenant',
} as const satisfies Record<string, InboxRule>;

/**
 * One of the zoo's bugs.
 *
 * @example
 * ```ts
 * const flaw: InboxFlaw = 'retries poison entries';
 * ```
 */
export type InboxFlaw = keyof typeof INBOX_FLAWS;

/**
 * Every bug of the zoo, in order.
 *
 * @example
 * ```ts
 * for (const flaw of ZOO_INBOX_FLAWS) zooInbox(flaw);
 * ```
 */
export const ZOO_INBOX_FLAWS = Object.keys(INBOX_FLAWS) as InboxFlaw[];

const roundTrip = () => new Promise<void>((resolve) => setImmediate(resolve));
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface ZooJob {
  readonly id: string;
  readonly entry: InboxEntry;
  readonly replay: { readonly id: string; readonly of: string } | undefined;
  readonly enqueuedAt: number;
  state: 'waiting' | 'active' | 'delayed' | 'failed';
  /** Attempts spent: failed ones, deferrals excluded. */
  attemptsMade: number;
  /** When a delayed job is due, or when an active job's lock ends. */
  until: number;
  /** The worker holding an active job. */
  holder: string | undefined;
  lastError: string;
  lastAttemptAt: number | undefined;
  failedAt: number | undefined;
}

/** The queue: jobs by id, in insertion order. */
class ZooBackend {
  readonly jobs = new Map<string, ZooJob>();

  add(id: string, entry: InboxEntry, replay?: ZooJob['replay']): void {
    this.jobs.set(id, {
      id,
      entry,
      replay,
      enqueuedAt: Date.now(),
      state: 'waiting',
      attemptsMade: 0,
      until: 0,
      holder: undefined,
      lastError: '',
      lastAttemptAt: undefined,
      failedAt: undefined,
    });
  }
}

/** The inbox's door: writes entries by key. */
class ZooInboxQueue implements InboxQueue {
  #pending: (() => void) | undefined;

  constructor(
    readonly backend: ZooBackend,
    readonly flaw: InboxFlaw | undefined,
  ) {}

  async enqueue(entry: InboxEntry, key: string): Promise<void> {
    await roundTrip();
    const write = () => this.write(entry, key);
    if (this.flaw === 'acknowledges before the write lands') {
      // The batch is flushed by the next write; the caller hears "done" before anything is stored.
      this.#pending?.();
      this.#pending = write;
      return;
    }
    write();
  }

  write(entry: unknown, key: string): void {
    if (this.flaw === 'drops the seal' && typeof entry === 'object' && entry !== null) {
      const { event, receivedAt, secretIndex } = entry as InboxEntry;
      entry = { event, receivedAt, secretIndex };
    }
    if (this.flaw === 'drops the tenant' && typeof entry === 'object' && entry !== null) {
      const { tenant: _dropped, ...known } = entry as InboxEntry;
      entry = known;
    }
    const id =
      this.flaw === 'a second enqueue of one key adds a second entry' ? `${key}#${randomUUID()}` : key;
    if (!this.backend.jobs.has(id)) this.backend.add(id, entry as InboxEntry);
  }
}

/** A worker: polls the backend, runs due jobs through `webhooks.process`, renews the locks it holds. */
class ZooWorker implements WorkerUnderTest {
  readonly #name = randomUUID();
  readonly #retries;
  #running = 0;
  #stopped = false;
  #crashed = false;
  readonly #settled = new Set<Promise<void>>();
  readonly #poll: NodeJS.Timeout;

  constructor(
    readonly backend: ZooBackend,
    readonly webhooks: Webhooks,
    readonly options: WorkerUnderTestOptions,
    readonly flaw: InboxFlaw | undefined,
  ) {
    this.#retries = schedule(options.backoff, 'zoo worker');
    this.#poll = setInterval(() => this.#fetch(), 10);
  }

  #fetch(): void {
    if (this.#stopped) return;
    const now = Date.now();
    const concurrency = this.options.concurrency ?? 4;
    for (const job of this.backend.jobs.values()) {
      const abandoned = job.state === 'active' && job.until <= now;
      const due = job.state === 'waiting' || (job.state === 'delayed' && job.until <= now);
      if (!due && !abandoned) continue;
      if (this.#running >= concurrency) {
        if (this.flaw !== 'acknowledges the part of a batch it could not run' || job.state !== 'waiting')
          return;
        this.backend.jobs.delete(job.id);
        continue;
      }
      if (abandoned) {
        if (this.flaw === 'loses the entries of a crashed worker') {
          this.backend.jobs.delete(job.id);
          continue;
        }
        if (this.flaw === 'recovering a crashed worker spends an attempt') job.attemptsMade++;
      }
      job.state = 'active';
      job.holder = this.#name;
      job.until = now + this.options.recoveryMs;
      const run = this.#run(job).finally(() => this.#settled.delete(run));
      this.#settled.add(run);
    }
  }

  async #run(job: ZooJob): Promise<void> {
    this.#running++;
    const renewal = setInterval(() => {
      // A crashed process renews nothing.
      if (!this.#crashed && job.holder === this.#name) job.until = Date.now() + this.options.recoveryMs;
    }, this.options.recoveryMs / 3);
    const attempt = job.attemptsMade + 1;
    job.lastAttemptAt = Date.now();
    let failure: unknown;
    let failed = false;
    try {
      await this.webhooks.process(job.entry, {
        attempt,
        ...(this.flaw === 'runs unsealed entries' ? { acceptUnsealed: true } : {}),
        ...(job.replay === undefined ? {} : { replayId: job.replay.id }),
      });
    } catch (error) {
      failed = true;
      failure = error;
    } finally {
      clearInterval(renewal);
      this.#running--;
    }
    // A crashed worker acknowledges nothing; a job another worker took over is not ours to settle.
    if (this.#crashed || job.holder !== this.#name || this.backend.jobs.get(job.id) !== job) return;
    job.holder = undefined;
    if (!failed) {
      this.backend.jobs.delete(job.id);
      return;
    }
    let verdict = judgeFailure(failure, attempt, this.options.attempts, this.#retries);
    if (
      this.flaw === 'retries poison entries' &&
      verdict.kind === 'dead-letter' &&
      verdict.reason === 'poison' &&
      attempt < this.options.attempts
    ) {
      verdict = { kind: 'retry', delayMs: this.#retries.delayMs(attempt), error: failure };
    }
    switch (verdict.kind) {
      case 'defer':
        job.state = 'delayed';
        job.until = Date.now() + verdict.delayMs;
        return;
      case 'retry':
        job.attemptsMade = attempt;
        job.state = 'delayed';
        job.until =
          Date.now() + (this.flaw === 'retries at once, ignoring the schedule' ? 0 : verdict.delayMs);
        return;
      case 'dead-letter': {
        job.attemptsMade = attempt;
        if (this.flaw === 'never dead-letters') {
          this.backend.jobs.delete(job.id);
          return;
        }
        const { message } = describeFailure(verdict.error);
        job.state = 'failed';
        job.failedAt = Date.now();
        job.lastError = this.flaw === 'dead-letters without the cause' ? '' : message;
        const event = job.entry?.event as WebhookEvent | undefined;
        const eventId = typeof event?.id === 'string' ? event.id : `(job ${job.id})`;
        if (this.flaw === 'dead-letters silently') return;
        this.webhooks.report(new EventDeadLetteredError(eventId, attempt, { cause: verdict.error }), event);
      }
    }
  }

  async close(): Promise<void> {
    // A crashed worker's runs may never settle (its store is cut off): there is nothing to wait for.
    if (this.#crashed) return;
    this.#stopped = true;
    clearInterval(this.#poll);
    await Promise.allSettled([...this.#settled]);
  }

  async crash(): Promise<void> {
    this.#stopped = true;
    this.#crashed = true;
    clearInterval(this.#poll);
  }
}

function toDeadLetter(job: ZooJob): DeadLetter {
  const event = job.entry?.event as Partial<WebhookEvent> | undefined;
  return {
    jobId: job.id,
    eventId: typeof event?.id === 'string' ? event.id : '',
    eventType: typeof event?.type === 'string' ? event.type : '',
    entry: job.entry,
    attempts: job.attemptsMade,
    lastError: job.lastError,
    stacktrace: [],
    receivedAt: job.entry?.receivedAt,
    enqueuedAt: job.enqueuedAt,
    lastAttemptAt: job.lastAttemptAt,
    failedAt: job.failedAt,
    replayOf: job.replay?.of,
  };
}

/** The admin: figures and the dead-letter list, each call a round trip. */
function zooAdmin(backend: ZooBackend, flaw: InboxFlaw | undefined): InboxAdmin {
  const failed = () => [...backend.jobs.values()].filter((job) => job.state === 'failed').reverse();
  const deadLettered = async (jobId: string): Promise<ZooJob> => {
    await roundTrip();
    const job = backend.jobs.get(jobId);
    if (!job) throw new DeadLetterError(jobId, undefined);
    if (job.state !== 'failed') throw new DeadLetterError(jobId, job.state);
    return job;
  };
  const replay = async (job: ZooJob): Promise<Replay> => {
    const replayId =
      flaw === 'a replay makes a fresh replay id each time'
        ? createHash('sha256').update(randomUUID()).digest('base64url').slice(0, 22)
        : replayIdOf(job.id, job.failedAt ?? job.enqueuedAt);
    const jobId = `replay:${replayId}`;
    await roundTrip();
    if (!backend.jobs.has(jobId)) backend.add(jobId, job.entry, { id: replayId, of: job.id });
    await roundTrip();
    backend.jobs.delete(job.id);
    return { jobId, replayId, eventId: toDeadLetter(job).eventId, replayOf: job.id };
  };
  return {
    engine: 'zoo',
    async stats(): Promise<InboxStats> {
      await roundTrip();
      const jobs = [...backend.jobs.values()];
      const count = (state: ZooJob['state']) => jobs.filter((job) => job.state === state).length;
      const waiting = jobs.filter((job) => job.state === 'waiting');
      const oldest = Math.min(...waiting.map((job) => job.entry?.receivedAt ?? job.enqueuedAt));
      return {
        waiting: waiting.length,
        active: count('active'),
        delayed: count('delayed'),
        depth: waiting.length + count('active') + count('delayed'),
        deadLettered: count('failed'),
        oldestWaitingMs: waiting.length === 0 ? undefined : Date.now() - oldest,
      };
    },
    async list(page) {
      const { offset, limit } = checkPage(page);
      await roundTrip();
      const all = failed();
      return { items: all.slice(offset, offset + limit).map(toDeadLetter), total: all.length, offset };
    },
    async get(jobId) {
      await roundTrip();
      const job = backend.jobs.get(jobId);
      return job?.state === 'failed' ? toDeadLetter(job) : undefined;
    },
    async replay(jobId) {
      return replay(await deadLettered(jobId));
    },
    async replayAll({ limit = Number.POSITIVE_INFINITY } = {}) {
      const done: Replay[] = [];
      for (const job of failed()) {
        if (done.length >= limit) break;
        done.push(await replay(job));
      }
      return done;
    },
    async remove(jobId) {
      const job = await deadLettered(jobId);
      if (flaw !== 'remove keeps the dead letter') backend.jobs.delete(job.id);
    },
    async close() {},
  };
}

/**
 * A fresh zoo inbox for one conformance test: the reference engine, or the one with `flaw`.
 *
 * @example
 * ```ts
 * inboxConformanceSuite({ name: 'zoo', describe, test, createInbox: async () => zooInbox(undefined) });
 * ```
 */
export function zooInbox(flaw: InboxFlaw | undefined): InboxUnderTest {
  const backend = new ZooBackend();
  const inbox = new ZooInboxQueue(backend, flaw);
  const workers = new Set<ZooWorker>();
  return {
    inbox,
    admin: zooAdmin(backend, flaw),
    async startWorker(webhooks, options) {
      const worker = new ZooWorker(backend, webhooks, options, flaw);
      workers.add(worker);
      await sleep(0);
      return worker;
    },
    async enqueueRaw(entry, key) {
      await roundTrip();
      inbox.write(entry, key);
    },
    unreachableInbox: () => ({
      enqueue: async () => {
        await roundTrip();
        // The write sits in an offline queue that is never flushed; the caller is told it landed.
        if (flaw === 'acknowledges while its backend is down') return;
        throw new Error('zoo: the backend is unreachable');
      },
    }),
    async close() {
      await Promise.all([...workers].map((worker) => worker.close()));
    },
  };
}
