import type { InboxAdmin, InboxQueue, Webhooks } from 'service-webhooks/core';
import type { InboxBackoff } from '../inbox/backoff.js';

/**
 * How {@link inboxConformanceSuite} runs: the engine under test, behind {@link InboxUnderTest}, and
 * the test runner's functions (vitest, jest, mocha and `node:test` all fit).
 *
 * @example
 * ```ts
 * inboxConformanceSuite({ name: 'my engine', describe, test, createInbox: async () => myEngineUnderTest() });
 * ```
 */
export interface InboxConformanceOptions {
  /** Name of the describe block, such as `'pg-boss'`. */
  readonly name: string;
  /** A fresh inbox (its own queue, nothing in it) for one test. */
  readonly createInbox: () => Promise<InboxUnderTest>;
  /** The runner's `describe`. */
  readonly describe: (name: string, body: () => void) => unknown;
  /** The runner's `test` (or `it`); the third argument is a timeout in ms. */
  readonly test: (name: string, body: () => Promise<void>, timeoutMs?: number) => unknown;
  /**
   * The shortest delay between attempts the engine honours: the schedule tests use it. SQS counts
   * visibility in whole seconds, so `1_000` there.
   * @default 200
   */
  readonly retryDelayMs?: number;
  /**
   * How much later than scheduled an attempt may start (the engine's polling interval, its
   * scheduler's tick).
   * @default 1_000
   */
  readonly scheduleSlackMs?: number;
  /**
   * Whether a second `enqueue` of one key adds nothing to the queue (BullMQ and pg-boss by job id, a
   * FIFO SQS queue by deduplication id). `false` declares an engine that may hold two copies (a
   * standard SQS queue) and relies on the store's claim: the suite then checks that the handlers
   * still complete once.
   * @default true
   */
  readonly dedupesEnqueue?: boolean;
}

/**
 * One engine's inbox, as the suite drives it: the door's queue, its admin, and workers it can start,
 * stop, and crash.
 *
 * @example
 * ```ts
 * const underTest: InboxUnderTest = { inbox, admin, startWorker, enqueueRaw, close };
 * ```
 */
export interface InboxUnderTest {
  /** The door's side: what `createWebhooks({ inbox })` is given. */
  readonly inbox: InboxQueue;
  /** The admin of the same inbox. */
  readonly admin: InboxAdmin;
  /** Start a worker that runs `webhooks` on this inbox's events; resolves once it takes events. */
  startWorker(webhooks: Webhooks, options: WorkerUnderTestOptions): Promise<WorkerUnderTest>;
  /**
   * Write `entry` as another producer might, past the door's checks (a poison message): the suite
   * passes values that are not valid entries.
   */
  enqueueRaw(entry: unknown, key: string): Promise<void>;
  /** Stop every worker still running, delete the queue, close the clients. */
  close(): Promise<void>;
}

/**
 * The worker settings the suite asks for: short schedules, so a test ends in seconds.
 *
 * @example
 * ```ts
 * await underTest.startWorker(webhooks, { attempts: 3, backoff: [1_000], recoveryMs: 2_000 });
 * ```
 */
export interface WorkerUnderTestOptions {
  /** Attempts before an event is dead-lettered, the first included. */
  readonly attempts: number;
  /** The delays between attempts. */
  readonly backoff: InboxBackoff;
  /** Events run at once. @default the engine's */
  readonly concurrency?: number;
  /**
   * How soon after a worker died its events may be handed out again: the engine's lock, lease or
   * visibility timeout, as short as it allows.
   */
  readonly recoveryMs: number;
}

/**
 * A worker the suite started.
 *
 * @example
 * ```ts
 * await worker.crash(); // as SIGKILL would: nothing acknowledged, nothing released
 * ```
 */
export interface WorkerUnderTest {
  /** Stop as on SIGTERM: take no more events, let the running ones settle. */
  close(): Promise<void>;
  /**
   * Stop as SIGKILL would, as far as one process can: take no more events and abandon the running
   * ones, acknowledging, failing, renewing and releasing nothing, so the engine must recover them as
   * after a crash. (The suite cuts the dead worker off from the store itself.)
   */
  crash(): Promise<void>;
}
