/**
 * What an inbox engine gives the conformance suite to be driven: its door's queue and admin, and
 * workers the suite starts, stops and crashes. Its own module because both the suite (which takes
 * it) and each trial (which drives it) need it, and the suite runs the trials.
 */
import type { InboxAdmin, InboxBackoff, InboxQueue, Webhooks } from 'service-webhooks/core';

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
  /**
   * Optional: a door's queue on this engine that cannot reach its backend (a closed client, a port
   * nobody listens on), whose `enqueue` must reject. Given, the suite checks that the door answers 503
   * `inbox_unavailable` rather than 200; engines cannot be taken down generically, so it is the
   * engine's to provide.
   */
  unreachableInbox?(): InboxQueue;
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
