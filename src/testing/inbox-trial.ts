/**
 * One test of `inboxConformanceSuite`, as the suite's tests share it: the engine's fresh inbox,
 * receivers on one shared in-memory store (each one's way to it can be cut, as a crash cuts a process's
 * sockets), the handler runs they saw, and waits that fail naming the rule.
 */
import {
  type AnyWebhookEvent,
  type ClaimResult,
  type CompleteResult,
  createWebhooks,
  DeadLetterError,
  type HandlerContext,
  type IdempotencyStore,
  type InboxAdmin,
  type InboxEntry,
  type InboxQueue,
  type RenewResult,
  type WebhookError,
  type Webhooks,
} from 'service-webhooks/core';
import { createTestEvent } from './create-test-event.js';
import { deliver } from './deliver.js';
import { InboxConformanceError, type InboxRule } from './inbox-conformance-error.js';
import type { InboxUnderTest, WorkerUnderTest, WorkerUnderTestOptions } from './inbox-under-test.js';
import { SequentialStoreModel } from './store-model.js';

/** The secret every receiver of a trial verifies with. */
export const SECRET = 'whsec_inbox_conformance';
/** The tenants of the tenant trial and their secrets, read from the `x-conformance-tenant` header. */
export const TENANT_SECRETS: Readonly<Record<string, string>> = {
  acme: 'whsec_inbox_conformance_acme',
  globex: 'whsec_inbox_conformance_globex',
};
/** The header the tenant trial's receivers read the tenant from. */
export const TENANT_HEADER = 'x-conformance-tenant';
/** The one event type the trials' handlers take. */
export const EVENT_TYPE = 'user.created';
/** A clock tolerance for the schedule's lower bound: engines and the suite read different clocks. */
export const CLOCK_TOLERANCE_MS = 50;
/** The receivers' lease in the crash test: short, so the dead worker's claim ends within seconds. */
export const CRASH_LEASE_SECONDS = 2;
/** Receivers with that lease, and a handler budget within it (as createWebhooks requires). */
export const SHORT_LEASE = {
  leaseSeconds: CRASH_LEASE_SECONDS,
  handlerTimeoutMs: CRASH_LEASE_SECONDS * 500,
} as const;

/** One handler run the suite saw. */
interface Run {
  readonly eventId: string;
  readonly attempt: number;
  readonly worker: string;
  readonly startedAt: number;
  /** `ctx.tenant`, for a receiver with `tenant`. */
  readonly tenant: string | undefined;
  outcome: 'running' | 'completed' | 'failed';
}

/** What a test's handler does; `worker` names the worker whose receiver runs it. */
type Behaviour = (event: AnyWebhookEvent, context: HandlerContext, worker: string) => Promise<void>;

interface ReceiverOptions {
  readonly leaseSeconds?: number;
  readonly handlerTimeoutMs?: number;
  readonly inbox?: InboxQueue;
  /** A receiver of many tenants ({@link TENANT_SECRETS}), as a platform's is. */
  readonly tenants?: boolean;
}

/** A receiver of the trial, whose way to the shared store can be cut. */
interface TrialReceiver {
  readonly webhooks: Webhooks;
  /** From now on, every store call of this receiver hangs forever (a crashed process's sockets). */
  partition(): void;
}

interface TrialWorker extends TrialReceiver {
  readonly worker: WorkerUnderTest;
}

/**
 * The store every receiver of a trial shares: the store contract's own reference model, on the
 * process's monotonic clock. (Not MemoryStore: only the package's root may load it, so that an
 * application on `service-webhooks/core` never does.)
 */
function referenceStore(): IdempotencyStore {
  const model = new SequentialStoreModel();
  const now = () => performance.now();
  return {
    claim: async (key, token, ms) => model.apply(key, { method: 'claim', token, ms }, now()) as ClaimResult,
    complete: async (key, token, ms) =>
      model.apply(key, { method: 'complete', token, ms }, now()) as CompleteResult,
    renew: async (key, token, ms) => model.apply(key, { method: 'renew', token, ms }, now()) as RenewResult,
    release: async (key, token) => {
      model.apply(key, { method: 'release', token }, now());
    },
  };
}

/** The shared store as one receiver reaches it: once partitioned, its calls never answer. */
function partitionable(store: IdempotencyStore, cut: { partitioned: boolean }): IdempotencyStore {
  const reach = <T>(call: () => Promise<T>): Promise<T> =>
    cut.partitioned ? new Promise<T>(() => {}) : call();
  return {
    claim: (key, token, leaseMs) => reach(() => store.claim(key, token, leaseMs)),
    complete: (key, token, ttlMs) => reach(() => store.complete(key, token, ttlMs)),
    release: (key, token) => reach(() => store.release(key, token)),
    renew: (key, token, leaseMs) => reach(() => store.renew!(key, token, leaseMs)),
  };
}

/** The suite's options as every trial reads them, defaults filled in. */
export interface Settings {
  readonly retryDelayMs: number;
  readonly scheduleSlackMs: number;
  readonly dedupesEnqueue: boolean;
  readonly recoveryMs: number;
  /** How long a wait for something the engine must do may take before the test fails. */
  readonly waitMs: number;
}

/**
 * One test's world: the engine's fresh inbox, one in-memory store shared by every receiver, the handler
 * runs and the errors the receivers reported; `close()` stops and closes all of it.
 */
export class Trial {
  readonly store = referenceStore();
  readonly runs: Run[] = [];
  readonly errors: { readonly error: WebhookError; readonly receiver: string }[] = [];
  behaviour: Behaviour = async () => {};
  /** The entries a door wrote, by event id: what the suite enqueues itself, sealed as the door seals. */
  readonly #entries = new Map<string, InboxEntry>();
  #door: Webhooks | undefined;
  readonly #closers: (() => Promise<void>)[] = [];
  readonly #hanging = new Set<() => void>();

  constructor(
    readonly underTest: InboxUnderTest,
    readonly settings: Settings,
  ) {}

  receiver(name: string, options: ReceiverOptions = {}): TrialReceiver {
    const cut = { partitioned: false };
    const shared = {
      store: partitionable(this.store, cut),
      ...(options.inbox === undefined ? {} : { inbox: options.inbox }),
      ...(options.leaseSeconds === undefined ? {} : { leaseSeconds: options.leaseSeconds }),
      ...(options.handlerTimeoutMs === undefined ? {} : { handlerTimeoutMs: options.handlerTimeoutMs }),
    };
    // A worker takes either kind of receiver; past `createWebhooks` the trial treats them alike.
    const webhooks = options.tenants
      ? (createWebhooks({
          ...shared,
          tenant: { from: { header: TENANT_HEADER }, secret: (tenant) => TENANT_SECRETS[tenant] },
        }) as unknown as Webhooks)
      : createWebhooks({ ...shared, secret: SECRET });
    webhooks.on(EVENT_TYPE, async (event, context) => {
      const run: Run = {
        eventId: event.id,
        attempt: context.attempt,
        worker: name,
        startedAt: Date.now(),
        tenant: (context as HandlerContext & { tenant?: string }).tenant,
        outcome: 'running',
      };
      this.runs.push(run);
      try {
        await this.behaviour(event, context, name);
        run.outcome = 'completed';
      } catch (error) {
        run.outcome = 'failed';
        throw error;
      }
    });
    webhooks.onError((error) => {
      this.errors.push({ error, receiver: name });
    });
    return {
      webhooks,
      partition: () => {
        cut.partitioned = true;
      },
    };
  }

  async startWorker(
    name: string,
    options: Partial<WorkerUnderTestOptions> = {},
    receiver: ReceiverOptions = {},
  ): Promise<TrialWorker> {
    const { webhooks, partition } = this.receiver(name, receiver);
    const worker = await this.underTest.startWorker(webhooks, {
      attempts: 3,
      backoff: [this.settings.retryDelayMs],
      recoveryMs: this.settings.recoveryMs,
      concurrency: 4,
      ...options,
    });
    let stopped = false;
    this.#closers.push(async () => {
      if (!stopped) await worker.close();
    });
    return {
      webhooks,
      partition,
      worker: {
        close: async () => {
          stopped = true;
          await worker.close();
        },
        crash: async () => {
          stopped = true;
          await worker.crash();
        },
      },
    };
  }

  /**
   * The entry the door writes for `event` (sealed, as every entry a worker may run), the same one each
   * time: taken from a door whose queue only keeps what it is given, so the suite enqueues it where
   * and as often as a test needs.
   */
  async entryOf(event: AnyWebhookEvent): Promise<InboxEntry> {
    const known = this.#entries.get(event.id);
    if (known) return known;
    this.#door ??= createWebhooks({
      secret: SECRET,
      store: this.store,
      inbox: {
        enqueue: async (entry) => {
          this.#entries.set(entry.event.id, entry);
        },
      },
    });
    const answer = await deliver(this.#door, event, { secret: SECRET });
    const entry = this.#entries.get(event.id);
    if (answer.status !== 200 || entry === undefined)
      throw new Error(`the suite's own door answered ${answer.status} ${answer.body} for ${event.id}`);
    return entry;
  }

  /** A handler body that never settles until the trial closes (then it throws). */
  hang(): Promise<void> {
    return new Promise((_, reject) => {
      this.#hanging.add(() => reject(new Error('the conformance test ended')));
    });
  }

  /** The handler runs of `event` that completed. */
  completed(event: { readonly id: string }): number {
    return this.runs.filter((run) => run.eventId === event.id && run.outcome === 'completed').length;
  }

  runsOf(event: { readonly id: string }): Run[] {
    return this.runs.filter((run) => run.eventId === event.id);
  }

  async depth(): Promise<number> {
    return (await this.underTest.admin.stats()).depth;
  }

  /** Poll `check` until it holds; past the wait, fail as `rule` with `what` and what `seen` says. */
  async waitUntil(
    rule: InboxRule,
    what: string,
    check: () => boolean | Promise<boolean>,
    seen: () => string | Promise<string> = () => '',
  ): Promise<void> {
    const deadline = performance.now() + this.settings.waitMs;
    for (;;) {
      if (await check()) return;
      if (performance.now() > deadline) {
        const saw = await seen();
        throw new InboxConformanceError(
          rule,
          `waited ${this.settings.waitMs} ms for ${what}${saw === '' ? '' : `; saw ${saw}`}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /** Wait until `events` each completed and nothing is left in the queue. */
  async drained(rule: InboxRule, events: readonly { readonly id: string }[]): Promise<void> {
    await this.waitUntil(
      rule,
      `${events.length} event(s) to be handled and the queue to drain`,
      async () => events.every((event) => this.completed(event) >= 1) && (await this.depth()) === 0,
      async () =>
        `${events.filter((event) => this.completed(event) >= 1).length} handled, depth ${await this.depth()}`,
    );
  }

  async close(): Promise<void> {
    for (const release of this.#hanging) release();
    const failures: unknown[] = [];
    for (const close of this.#closers.splice(0).reverse())
      await close().catch((error) => failures.push(error));
    await this.underTest.close();
    if (failures.length > 0) throw failures[0];
  }
}

/** Fail as `rule` with `message()` unless `holds`. */
export function check(rule: InboxRule, holds: boolean, message: () => string): void {
  if (!holds) throw new InboxConformanceError(rule, message());
}

/** A fresh event of {@link EVENT_TYPE}. */
export function newEvent(): AnyWebhookEvent {
  return createTestEvent(EVENT_TYPE);
}

/** The key the suite enqueues `event` under: the door's would be scoped to its receiver instead. */
export function keyOf(event: { readonly id: string }): string {
  return `conformance:${event.id}`;
}

/** The dead letter of `event` on the admin's first page, if any. */
export async function deadLetterOf(admin: InboxAdmin, event: { readonly id: string }) {
  const { items } = await admin.list({ limit: 100 });
  return items.find((letter) => letter.eventId === event.id);
}

/** `undefined` when `run` rejects with `DeadLetterError`; else what it did instead. */
export async function refusedAsDeadLetterError(run: () => Promise<unknown>): Promise<string | undefined> {
  try {
    await run();
    return 'it fulfilled';
  } catch (error) {
    return error instanceof DeadLetterError ? undefined : `it threw ${String(error)}`;
  }
}
