/**
 * Flow control of inbox workers: the options every engine's worker takes (`rate`,
 * `concurrencyPerKey`), and the small shared state that keeps them across workers (`FlowControl`,
 * with a Redis and a PostgreSQL implementation in `service-webhooks/redis` and
 * `service-webhooks/postgres`). The worker that uses them is `src/inbox/flow-gate.ts`.
 */
import type { InboxEntry } from './types.js';

export type { ThrottleReason } from './throttle-reason.js';

/**
 * What a {@link FlowControl} answers to a request for a slot: granted, or how long until one may free.
 *
 * @example
 * ```ts
 * const grant: FlowGrant = await flow.acquireRate('rate:inbox', 60, 60_000);
 * if (!grant.granted) console.log(`next slot in ${grant.waitMs} ms`);
 * ```
 */
export type FlowGrant = { readonly granted: true } | { readonly granted: false; readonly waitMs: number };

/**
 * The shared state behind a worker's flow control: one operation per round trip (a Lua script on
 * Redis, one statement on PostgreSQL), on the backend's own clock so that the workers' clocks need
 * not agree. Keys are the worker's (`rate:<queue>`, `key:<queue>:<key>`); an implementation only
 * keeps them apart from its other keys.
 *
 * @example
 * ```ts
 * import { RedisFlowControl } from 'service-webhooks/redis';
 *
 * const flow: FlowControl = new RedisFlowControl({ client: new Redis(process.env.REDIS_URL!) });
 * const grant = await flow.acquireSlot('key:inbox:acct_1', crypto.randomUUID(), 2, 30_000);
 * ```
 */
export interface FlowControl {
  /**
   * Take one of `max` starts allowed in any window of `windowMs` (a sliding log of grants): granted,
   * or the wait until the oldest grant of the window leaves it.
   */
  acquireRate(key: string, max: number, windowMs: number): Promise<FlowGrant>;
  /**
   * Take one of `max` slots of `key` for `holder`, leased for `leaseMs` (a holder whose worker dies
   * frees its slot when the lease ends): granted, or the wait until the first lease ends.
   */
  acquireSlot(key: string, holder: string, max: number, leaseMs: number): Promise<FlowGrant>;
  /** Extend `holder`'s lease to `leaseMs` from now; `false` when it had already ended. */
  renewSlot(key: string, holder: string, leaseMs: number): Promise<boolean>;
  /** Give `holder`'s slot back. */
  releaseSlot(key: string, holder: string): Promise<void>;
}

/**
 * At most `max` handler starts in any window of `perMs`, across every worker of the queue.
 *
 * @example
 * ```ts
 * const rate: InboxRate = { max: 100, perMs: 3_600_000 }; // the service's Free plan
 * ```
 */
export interface InboxRate {
  readonly max: number;
  readonly perMs: number;
  /**
   * Added to the window, so that the time from a grant to its handler's start (the store's claim, a
   * busy event loop) cannot bring two starts closer than the window.
   * @default 2% of `perMs`, from 100 ms to 1 s
   */
  readonly marginMs?: number;
}

/**
 * At most `max` handlers at once for each key, across every worker of the queue.
 *
 * @example
 * ```ts
 * const perAccount: InboxConcurrencyPerKey = { key: (entry) => String((entry.event.data as { account?: string }).account), max: 2 };
 * ```
 */
export interface InboxConcurrencyPerKey {
  /** The key of an entry: the tenant, the resource, the event type. Called before each run. */
  readonly key: (entry: InboxEntry) => string;
  readonly max: number;
  /**
   * A slot's lease, renewed every third of it while the handlers run: after a worker died, its slots
   * free once it ended.
   * @default 30_000
   */
  readonly leaseMs?: number;
}

/**
 * The flow-control options every inbox worker takes (BullMQ, pg-boss, SQS), with the same meaning.
 * An entry held back waits in its worker for up to `holdMs`, then is deferred through the engine
 * (as a deferral: no attempt spent, never dead-lettered). While the shared state cannot be reached,
 * entries are deferred, never run unthrottled, and a warning is logged at most once a minute.
 *
 * @example
 * ```ts
 * startInboxWorker(webhooks, { connection, rate: { max: 100, perMs: 3_600_000 }, concurrencyPerKey: { key: (entry) => entry.event.type, max: 2 } });
 * ```
 */
export interface InboxFlowOptions {
  /** Handler starts allowed per period, shared by all workers of the queue. */
  readonly rate?: InboxRate;
  /** Handlers allowed at once per key, shared by all workers of the queue. */
  readonly concurrencyPerKey?: InboxConcurrencyPerKey;
  /**
   * Where the shared state lives, when not the engine's own backend (BullMQ: its Redis; pg-boss: its
   * PostgreSQL): a `RedisFlowControl`, a `PostgresFlowControl`, or a `RedisStore`/`PostgresStore`
   * (their `flowControl()`). SQS has no backend of its own and needs one for `rate` or
   * `concurrencyPerKey`.
   */
  readonly flowControl?: FlowControl | FlowControlSource;
  /**
   * How long a held-back entry waits in its worker for a slot before it is deferred through the engine.
   * @default 2_000
   */
  readonly holdMs?: number;
}

/**
 * A store that can keep flow-control state on its own connection (`RedisStore`, `PostgresStore`).
 *
 * @example
 * ```ts
 * const store = new RedisStore({ client });
 * startSqsWorker(webhooks, { client: sqs, queueUrl, rate: { max: 10, perMs: 1_000 }, flowControl: store });
 * ```
 */
export interface FlowControlSource {
  flowControl(): FlowControl;
}
