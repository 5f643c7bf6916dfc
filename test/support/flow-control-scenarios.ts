/**
 * The flow-control scenarios every inbox engine runs (BullMQ, pg-boss, SQS), on its real backend:
 * a rate kept over a sliding window across several workers, a per-key concurrency across workers (and
 * keyed on the tenant, for a receiver of many accounts), a handler's RateLimitedError deferring without
 * spending an attempt. Each engine's file gives a rig
 * (its door's queue, and workers started with flow-control options); the assertions are here, once.
 *
 * Scale: the issue's "60 per minute" as 6 per second, over 30 events (five periods and more) with
 * three workers of four slots each: twelve handlers could start at once, so the rate is what holds
 * them back. What proves the rate is every window of one period, measured from the handlers' own
 * start times: none holds more than six starts.
 */
import {
  type AnyWebhooks,
  createWebhooks,
  type HandlerContext,
  type InboxEntry,
  type InboxFlowOptions,
  type InboxQueue,
  type InboxStats,
  MemoryStore,
  RateLimitedError,
  type WebhookEventName,
  type Webhooks,
} from 'service-webhooks';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { expect, test } from 'vitest';
import { waitUntil } from './wait-until.js';

const SECRET = 'whsec_flow_control_tests';
/** The accounts of the per-tenant scenario, read from a header as a proxy in front would name them. */
const ACCOUNT_SECRETS: Readonly<Record<string, string>> = {
  acme: 'whsec_flow_control_acme',
  globex: 'whsec_flow_control_globex',
};
const ACCOUNT_HEADER = 'x-account-id';

/** What one engine's file gives the scenarios. */
export interface FlowRig {
  /** The door's queue, for `createWebhooks({ inbox })`. */
  readonly inbox: InboxQueue;
  /** Start a worker with these options; resolves once it takes events. */
  startWorker(
    webhooks: AnyWebhooks,
    options: InboxFlowOptions & { readonly concurrency: number; readonly attempts: number },
  ): Promise<{ stats(): Promise<InboxStats>; close(): Promise<void> }>;
  /** Whether the engine's figures count rate-limited entries (SQS cannot: `undefined`). */
  readonly countsThrottled: boolean;
  close(): Promise<void>;
}

interface Start {
  readonly eventId: string;
  readonly key: string;
  readonly attempt: number;
  readonly at: number;
}

/**
 * Queue the events before any worker starts, five at a time: a backlog is what flow control holds
 * back, and a door that shares a loaded machine with running workers would only add its own waits.
 */
async function queueEvents(rig: FlowRig, types: readonly WebhookEventName[], perType: number): Promise<void> {
  const door = createWebhooks({ secret: SECRET, store: new MemoryStore(), inbox: rig.inbox });
  const events = Array.from({ length: perType }, () => types.map((type) => createTestEvent(type))).flat();
  for (let index = 0; index < events.length; index += 5) {
    await Promise.all(
      events.slice(index, index + 5).map(async (event) => {
        const answer = await deliver(door, event, { secret: SECRET });
        if (answer.status !== 200) throw new Error(`the door answered ${answer.status} ${answer.body}`);
      }),
    );
  }
}

/** How many handlers of each key run at once, the most each key and all keys together reached, and how many ended. */
class RunningTally {
  readonly #running = new Map<string, number>();
  readonly most = new Map<string, number>();
  together = 0;
  ended = 0;

  start(key: string): void {
    const now = (this.#running.get(key) ?? 0) + 1;
    this.#running.set(key, now);
    this.most.set(key, Math.max(this.most.get(key) ?? 0, now));
    this.together = Math.max(
      this.together,
      [...this.#running.values()].reduce((sum, count) => sum + count, 0),
    );
  }

  end(key: string): void {
    this.#running.set(key, this.#running.get(key)! - 1);
    this.ended++;
  }
}

/** The most starts any window of `windowMs` holds, each window opening at a start. */
export function busiestWindow(starts: readonly number[], windowMs: number): number {
  const sorted = [...starts].sort((a, b) => a - b);
  let most = 0;
  let first = 0;
  for (let last = 0; last < sorted.length; last++) {
    while (sorted[last]! - sorted[first]! >= windowMs) first++;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

/**
 * Register the three scenarios for one engine. `createRig` makes a fresh queue per test; `timeoutMs`
 * bounds each test (the engines' deferrals differ: SQS hides a message in whole seconds).
 */
export function flowControlScenarios(name: string, createRig: () => Promise<FlowRig>): void {
  test(`${name}: no window of one period sees more handler starts than the rate, across three workers`, async () => {
    const rig = await createRig();
    const workers: { close(): Promise<void> }[] = [];
    try {
      const starts: Start[] = [];
      const webhooks = quiet(createWebhooks({ secret: SECRET, store: new MemoryStore() }));
      webhooks.on('payment.succeeded', async (event, ctx: HandlerContext) => {
        starts.push({ eventId: event.id, key: event.type, attempt: ctx.attempt, at: Date.now() });
        await new Promise((resolve) => setTimeout(resolve, 20));
      });
      const rate = { max: 6, perMs: 1_000 };
      await queueEvents(rig, ['payment.succeeded'], 30);
      for (let index = 0; index < 3; index++)
        workers.push(await rig.startWorker(webhooks, { concurrency: 4, attempts: 1, rate }));
      await waitUntil('30 handled events', () => starts.length >= 30, 30_000);
      expect(new Set(starts.map((start) => start.eventId)).size).toBe(30);
      // attempts: 1: a throttle that spent an attempt would have dead-lettered the event instead.
      expect(starts.every((start) => start.attempt === 1)).toBe(true);
      expect(
        busiestWindow(
          starts.map((start) => start.at),
          rate.perMs,
        ),
      ).toBeLessThanOrEqual(rate.max);
      // Thirty starts at six a period cannot all fall within four periods.
      const times = starts.map((start) => start.at);
      expect(Math.max(...times) - Math.min(...times)).toBeGreaterThanOrEqual(4 * rate.perMs);
    } finally {
      for (const worker of workers) await worker.close();
      await rig.close();
    }
  });

  test(`${name}: a per-key concurrency of 2 never runs 3 handlers of one key at once, across three workers`, async () => {
    const rig = await createRig();
    const workers: { close(): Promise<void> }[] = [];
    try {
      const tally = new RunningTally();
      const webhooks = quiet(createWebhooks({ secret: SECRET, store: new MemoryStore() }));
      webhooks.on(['payment.succeeded', 'payment.failed'], async (event) => {
        tally.start(event.type);
        await new Promise((resolve) => setTimeout(resolve, 150));
        tally.end(event.type);
      });
      const concurrencyPerKey = { key: (entry: InboxEntry) => entry.event.type, max: 2 };
      await queueEvents(rig, ['payment.succeeded', 'payment.failed'], 8);
      for (let index = 0; index < 3; index++)
        workers.push(await rig.startWorker(webhooks, { concurrency: 4, attempts: 1, concurrencyPerKey }));
      await waitUntil('16 handled events', () => tally.ended >= 16, 30_000);
      expect(Math.max(...tally.most.values())).toBeLessThanOrEqual(2);
      // Twelve slots and two keys: each key ran two at once at some point, so the limit was what held.
      expect([...tally.most.values()]).toEqual([2, 2]);
    } finally {
      for (const worker of workers) await worker.close();
      await rig.close();
    }
  });

  test(`${name}: a per-tenant concurrency of 2 keeps each account to 2 handlers at once, and one account's backlog never holds the other back`, async () => {
    const rig = await createRig();
    const workers: { close(): Promise<void> }[] = [];
    try {
      const tally = new RunningTally();
      const tenant = {
        from: { header: ACCOUNT_HEADER },
        secret: (account: string) => ACCOUNT_SECRETS[account],
      } as const;
      const webhooks = createWebhooks({ tenant, store: new MemoryStore() });
      webhooks.onError(() => {});
      webhooks.on('payment.succeeded', async (_event, ctx) => {
        tally.start(ctx.tenant);
        // Held until four run at once, however slowly a loaded machine starts the workers: with a slot
        // per account they do; with one key for every account they never would (the wait gives up).
        await waitUntil('four handlers at once', () => tally.together >= 4, 5_000).catch(() => {});
        await new Promise((resolve) => setTimeout(resolve, 20));
        tally.end(ctx.tenant);
      });
      // One event type for both accounts: only the tenant tells their entries apart.
      const door = createWebhooks({ tenant, store: new MemoryStore(), inbox: rig.inbox });
      for (const account of ['acme', 'globex']) {
        for (let index = 0; index < 8; index++) {
          const answer = await deliver(door, createTestEvent('payment.succeeded'), {
            secret: ACCOUNT_SECRETS[account]!,
            headers: { [ACCOUNT_HEADER]: account },
          });
          if (answer.status !== 200) throw new Error(`the door answered ${answer.status} ${answer.body}`);
        }
      }
      const concurrencyPerKey = { key: (entry: InboxEntry) => entry.tenant ?? '', max: 2 };
      for (let index = 0; index < 3; index++)
        workers.push(await rig.startWorker(webhooks, { concurrency: 4, attempts: 1, concurrencyPerKey }));
      await waitUntil('16 handled events', () => tally.ended >= 16, 30_000);
      // Twelve slots, two accounts: each ran two at once at some point, and never three; and globex's
      // ran beside acme's backlog (four at once), which one key for every account would not allow.
      expect(Object.fromEntries(tally.most)).toEqual({ acme: 2, globex: 2 });
      expect(tally.together).toBe(4);
    } finally {
      for (const worker of workers) await worker.close();
      await rig.close();
    }
  });

  test(`${name}: a handler that throws RateLimitedError three times runs a fourth time with ctx.attempt 1`, async () => {
    const rig = await createRig();
    let worker: { stats(): Promise<InboxStats>; close(): Promise<void> } | undefined;
    try {
      const runs: { attempt: number; at: number }[] = [];
      const webhooks = quiet(createWebhooks({ secret: SECRET, store: new MemoryStore() }));
      webhooks.on('payment.succeeded', async (_event, ctx) => {
        runs.push({ attempt: ctx.attempt, at: Date.now() });
        if (runs.length <= 3) throw new RateLimitedError(1_000);
      });
      // Two attempts: had a 429 spent one, the second would have dead-lettered the event.
      await queueEvents(rig, ['payment.succeeded'], 1);
      worker = await rig.startWorker(webhooks, { concurrency: 2, attempts: 2 });
      await waitUntil('the first 429', () => runs.length >= 1, 15_000);
      // Read while the event waits out its 429s (three waits of a second or more): counted as rate limited.
      let rateLimited: number | undefined;
      while (runs.length < 4 && rateLimited !== 1) rateLimited = (await worker.stats()).rateLimited;
      if (rig.countsThrottled) expect(rateLimited).toBe(1);
      else expect(rateLimited).toBeUndefined();
      await waitUntil('the fourth run', () => runs.length >= 4, 20_000);
      expect(runs.map((run) => run.attempt)).toEqual([1, 1, 1, 1]);
      for (let index = 1; index < 4; index++)
        expect(runs[index]!.at - runs[index - 1]!.at).toBeGreaterThanOrEqual(1_000 - 50);
      expect((await worker.stats()).deadLettered).toBe(0);
    } finally {
      await worker?.close();
      await rig.close();
    }
  });
}

/** A receiver whose handler failures (the 429s thrown on purpose) are not printed to stderr. */
function quiet(webhooks: Webhooks): Webhooks {
  webhooks.onError(() => {});
  return webhooks;
}
