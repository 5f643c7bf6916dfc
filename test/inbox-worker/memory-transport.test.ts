/**
 * The shared inbox worker over the smallest engine there is: an in-memory queue as an `InboxTransport`
 * (a real engine of a few lines, not a mock: what a RabbitMQ or NATS transport would be, minus the
 * network). The policy is the worker's: attempts and schedule, deferral, dead letters and their
 * reports, the crash limit, the receive warning once a minute, the graceful and the forced close, and
 * copies handed out before their time (never run early: waited for, or given back to the queue).
 */
import {
  createWebhooks,
  EventDeadLetteredError,
  type InboxEntry,
  type InboxStats,
  MemoryStore,
  type WebhookError,
  type WebhooksOptions,
} from 'service-webhooks';
import { createTestEvent } from 'service-webhooks/testing';
import { afterEach, expect, test } from 'vitest';
import { schedule } from '../../src/inbox/backoff.js';
import type { DeadLetter, EarlyCopies, InboxDelivery, InboxTransport } from '../../src/inbox/transport.js';
import { InboxWorkerCore } from '../../src/inbox/worker.js';
import { sealed } from '../support/sealed-entry.js';
import { waitUntil } from '../support/wait-until.js';

const SECRET = 'whsec_memory_transport';

interface MemoryDelivery extends InboxDelivery {
  readonly id: number;
  /** When the copy may run, as a retry's copy in SQS or RabbitMQ carries it. */
  readonly notBefore?: number | undefined;
}

interface Job {
  readonly id: number;
  readonly entry: InboxEntry;
  readonly attempt: number;
  readonly dueAt: number;
  readonly crashes?: number | undefined;
  readonly notBefore?: number | undefined;
}

/** A queue in memory: jobs due at a time, taken by `receive`, ended by the settling operations. */
class MemoryTransport implements InboxTransport<MemoryDelivery> {
  readonly name = 'memory-inbox';
  readonly redelivery = 'the job comes back';
  readonly receiveTrouble = 'webhook inbox: cannot receive from memory; retrying';
  readonly receiveRetryMs = 10;
  readonly idleMs = 10;
  readonly attemptTravels = false;
  waiting: Job[] = [];
  readonly taken = new Map<number, Job>();
  readonly acknowledged: number[] = [];
  readonly deadLetters: { job: Job; failure: DeadLetter }[] = [];
  failReceives = 0;
  failHoldBacks = 0;
  readonly heldBack: { id: number; earlyMs: number }[] = [];
  #next = 1;

  /** The queue hands a job out when asked, whatever its `notBefore`: the worker must not run it early. */
  readonly earlyCopies: EarlyCopies<MemoryDelivery>;

  constructor(holdBackFromMs = 100) {
    this.earlyCopies = {
      notBefore: (delivery) => delivery.notBefore,
      holdBackFromMs,
      holdBack: async (delivery, earlyMs) => {
        if (this.failHoldBacks > 0) {
          this.failHoldBacks--;
          throw new Error('the queue refused the hold-back');
        }
        this.heldBack.push({ id: delivery.id, earlyMs });
        this.#requeue(delivery, delivery.attempt, earlyMs);
      },
    };
  }

  add(entry: InboxEntry, more: Partial<Job> = {}): void {
    this.waiting.push({ id: this.#next++, entry, attempt: 1, dueAt: 0, ...more });
  }

  async receive(max: number): Promise<MemoryDelivery[]> {
    if (this.failReceives > 0) {
      this.failReceives--;
      throw new Error('the queue is unreachable');
    }
    const now = Date.now();
    const due = this.waiting.filter((job) => job.dueAt <= now).slice(0, max);
    this.waiting = this.waiting.filter((job) => !due.includes(job));
    return due.map((job) => {
      this.taken.set(job.id, job);
      return {
        id: job.id,
        entry: job.entry,
        attempt: job.attempt,
        ids: { jobId: job.id },
        unnamed: `(job ${job.id})`,
        notBefore: job.notBefore,
        ...(job.crashes === undefined ? {} : { crashes: job.crashes, recovered: true }),
      };
    });
  }

  async acknowledge(delivery: MemoryDelivery): Promise<void> {
    this.acknowledged.push(delivery.id);
    this.taken.delete(delivery.id);
  }

  async defer(delivery: MemoryDelivery, delayMs: number): Promise<void> {
    this.#requeue(delivery, delivery.attempt, delayMs);
  }

  async retry(delivery: MemoryDelivery, next: { attempt: number; delayMs: number }): Promise<void> {
    this.#requeue(delivery, next.attempt, next.delayMs);
  }

  async deadLetter(delivery: MemoryDelivery, failure: DeadLetter): Promise<void> {
    this.deadLetters.push({ job: this.taken.get(delivery.id)!, failure });
    this.taken.delete(delivery.id);
  }

  async stats(): Promise<InboxStats> {
    const delayed = this.waiting.filter((job) => job.dueAt > Date.now()).length;
    return {
      waiting: this.waiting.length - delayed,
      active: this.taken.size,
      delayed,
      depth: this.waiting.length,
      oldestWaitingMs: undefined,
      deadLettered: this.deadLetters.length,
    } as InboxStats;
  }

  #requeue(delivery: MemoryDelivery, attempt: number, delayMs: number): void {
    const job = this.taken.get(delivery.id)!;
    this.taken.delete(delivery.id);
    // The copy keeps its `notBefore`, as an engine's copy carries its time.
    this.waiting.push({ ...job, attempt, dueAt: Date.now() + delayMs, crashes: undefined });
  }
}

type Logged = { level: string; record: Record<string, unknown>; message: string };

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

function setup(
  options: {
    attempts?: number;
    maxCrashes?: number;
    concurrency?: number;
    ordering?: WebhooksOptions['ordering'];
    holdBackFromMs?: number;
  } = {},
) {
  const transport = new MemoryTransport(options.holdBackFromMs);
  const logged: Logged[] = [];
  const capture = (level: string) => (record: object, message?: string) => {
    logged.push({ level, record: record as Record<string, unknown>, message: message ?? '' });
  };
  const logger = { info: capture('info'), warn: capture('warn'), error: capture('error') };
  const errors: WebhookError[] = [];
  const webhooks = createWebhooks({
    secret: SECRET,
    store: new MemoryStore(),
    logger: { info() {}, warn() {}, error() {} },
    ...(options.ordering === undefined ? {} : { ordering: options.ordering }),
  });
  webhooks.onError((error) => {
    errors.push(error);
  });
  const start = () => {
    const worker = new InboxWorkerCore(
      webhooks,
      transport,
      {
        concurrency: options.concurrency ?? 4,
        attempts: options.attempts ?? 3,
        retries: schedule([20], 'test'),
        handlerTimeoutMs: undefined,
        acceptUnsealedEntries: false,
        ...(options.maxCrashes === undefined ? {} : { maxCrashes: options.maxCrashes }),
        monitor: undefined,
      },
      logger,
    );
    closing.push(() => worker.close(true));
    return worker;
  };
  const entry = async (type = 'user.created') =>
    sealed(
      { event: createTestEvent(type as 'user.created'), receivedAt: Date.now(), secretIndex: 0 },
      SECRET,
    );
  return { transport, logged, errors, webhooks, start, entry };
}

test('a failing handler is retried on the schedule with the next attempt, then acknowledged once', async () => {
  const { transport, logged, webhooks, start, entry } = setup({ attempts: 3 });
  const seen: number[] = [];
  webhooks.on('user.created', (_event, ctx) => {
    seen.push(ctx.attempt);
    if (ctx.attempt < 3) throw new Error(`crm down (attempt ${ctx.attempt})`);
  });
  transport.add(await entry());
  start();
  await waitUntil('the event to be acknowledged', () => transport.acknowledged.length === 1);
  expect(seen).toEqual([1, 2, 3]);
  const retries = logged.filter(({ message }) => message === 'webhook inbox: attempt failed; retrying');
  expect(
    retries.map(({ record }) => [record.inbox, record.attempt, record.nextAttemptInMs, record.error]),
  ).toEqual([
    ['memory-inbox', 1, 20, 'handler_failed: crm down (attempt 1)'],
    ['memory-inbox', 2, 20, 'handler_failed: crm down (attempt 2)'],
  ]);
  expect(transport.deadLetters).toHaveLength(0);
});

test('the last failure is dead-lettered with its cause, logged, and reported to onError once', async () => {
  const { transport, logged, errors, webhooks, start, entry } = setup({ attempts: 2 });
  webhooks.on('user.created', () => {
    throw new Error('crm down');
  });
  const queued = await entry();
  transport.add(queued);
  start();
  await waitUntil('the dead letter', () => transport.deadLetters.length === 1);
  const { failure } = transport.deadLetters[0]!;
  expect(failure).toMatchObject({ reason: 'last-attempt', attempt: 2, message: 'handler_failed: crm down' });
  expect(failure.stack).toContain('Error: crm down');
  await waitUntil('the report', () => errors.some((error) => error instanceof EventDeadLetteredError));
  const reported = errors.filter(
    (error) => error instanceof EventDeadLetteredError,
  ) as EventDeadLetteredError[];
  expect(reported).toHaveLength(1);
  expect(reported[0]!.attempts).toBe(2);
  expect(reported[0]!.message).toContain(queued.event.id);
  const line = logged.find(({ message }) => message === 'webhook inbox: event dead-lettered');
  expect(line?.record).toMatchObject({
    jobId: 1,
    eventId: queued.event.id,
    attempt: 2,
    reason: 'last-attempt',
  });
});

test('an event that crashed more workers than maxCrashes is dead-lettered without running a handler', async () => {
  const { transport, logged, webhooks, start, entry } = setup({ maxCrashes: 2 });
  let runs = 0;
  webhooks.on('user.created', () => {
    runs++;
  });
  transport.add(await entry(), { crashes: 3 });
  transport.add(await entry(), { crashes: 2 });
  start();
  await waitUntil(
    'one dead letter and one acknowledgement',
    () => transport.deadLetters.length === 1 && transport.acknowledged.length === 1,
  );
  expect(runs).toBe(1);
  expect(transport.deadLetters[0]!.failure.reason).toBe('crashed');
  expect(transport.deadLetters[0]!.failure.message).toContain('abandoned by 3 workers');
  const recovered = logged.filter(({ message }) =>
    message.startsWith('webhook inbox: event abandoned by a worker'),
  );
  expect(recovered.map(({ record }) => record.crashes)).toEqual([3, 2]);
});

test('receive trouble is said once a minute, and the worker keeps receiving', async () => {
  const { transport, logged, webhooks, start, entry } = setup();
  webhooks.on('user.created', () => {});
  transport.failReceives = 5;
  transport.add(await entry());
  start();
  await waitUntil('the event to be acknowledged', () => transport.acknowledged.length === 1);
  const warnings = logged.filter(
    ({ message }) => message === 'webhook inbox: cannot receive from memory; retrying',
  );
  expect(warnings).toHaveLength(1);
  expect(String((warnings[0]!.record.err as Error).message)).toBe('the queue is unreachable');
});

test('a graceful close waits for the running handler and records its outcome; a forced one records nothing', async () => {
  const { transport, webhooks, start, entry } = setup();
  let release: () => void = () => {};
  webhooks.on('user.created', () => new Promise<void>((resolve) => (release = resolve)));
  transport.add(await entry());
  const graceful = start();
  await waitUntil('the handler to run', () => graceful.running === 1);
  let closed = false;
  const closes = graceful.close().then(() => (closed = true));
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(closed).toBe(false);
  release();
  await closes;
  expect(transport.acknowledged).toEqual([1]);

  transport.add(await entry());
  const forced = start();
  await waitUntil('the second handler to run', () => forced.running === 1);
  await forced.close(true);
  release();
  await new Promise((resolve) => setTimeout(resolve, 50));
  // Left as it was taken: it comes back by the engine's lease, as after a crash.
  expect(transport.acknowledged).toEqual([1]);
  expect(transport.taken.has(2)).toBe(true);
});

test("more runs in flight than Node's ten listeners raise no leak warning, and a forced close still reaches each", async () => {
  const { transport, webhooks, start, entry } = setup({ concurrency: 30 });
  const releases: (() => void)[] = [];
  webhooks.on('user.created', () => new Promise<void>((resolve) => releases.push(resolve)));
  for (let i = 0; i < 30; i++) transport.add(await entry());
  const warnings: Error[] = [];
  const onWarning = (warning: Error) => warnings.push(warning);
  process.on('warning', onWarning);
  try {
    const worker = start();
    await waitUntil('thirty handlers to run at once', () => worker.running === 30);
    // Node emits a warning on the next tick: give it one.
    await new Promise((resolve) => setImmediate(resolve));
    await worker.close(true);
    for (const release of releases) release();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(warnings.map(({ name }) => name)).not.toContain('MaxListenersExceededWarning');
    // Abandoned, all thirty: each run heard the forced close, none was settled.
    expect(transport.acknowledged).toEqual([]);
    expect(transport.taken.size).toBe(30);
  } finally {
    process.off('warning', onWarning);
  }
});

test('ordering: an event of a busy resource is deferred without spending an attempt, and the two never overlap', async () => {
  // One attempt each: a deferral that spent one would dead-letter the second event.
  const { transport, logged, webhooks, start } = setup({ attempts: 1, ordering: { 'user.*': 'serialize' } });
  let running = 0;
  let overlaps = 0;
  const ran: string[] = [];
  webhooks.on('user.updated', async (event) => {
    running++;
    if (running > 1) overlaps++;
    await new Promise((resolve) => setTimeout(resolve, 100));
    ran.push(event.id);
    running--;
  });
  const data = { object: 'user', id: 'usr_serial' } as never;
  const events = [createTestEvent('user.updated', { data }), createTestEvent('user.updated', { data })];
  for (const event of events)
    transport.add(await sealed({ event, receivedAt: Date.now(), secretIndex: 0 }, SECRET));
  start();
  await waitUntil('both events to be acknowledged', () => transport.acknowledged.length === 2, 10_000);
  expect(overlaps).toBe(0);
  expect(ran.sort()).toEqual(events.map((event) => event.id).sort());
  expect(transport.deadLetters).toHaveLength(0);
  expect(
    logged.some(
      ({ message }) => message === 'webhook inbox: another event of the resource is being handled; deferred',
    ),
  ).toBe(true);
});

test('ordering latest: a stale entry is acknowledged as done without running', async () => {
  const { transport, webhooks, start } = setup({ ordering: { 'user.*': 'latest' } });
  const ran: string[] = [];
  webhooks.on('user.updated', (event) => {
    ran.push(event.id);
  });
  const data = { object: 'user', id: 'usr_latest' } as never;
  const created = Math.floor(Date.now() / 1000);
  const newer = createTestEvent('user.updated', { data, created });
  const older = createTestEvent('user.updated', { data, created: created - 60 });
  transport.add(await sealed({ event: newer, receivedAt: Date.now(), secretIndex: 0 }, SECRET));
  start();
  await waitUntil('the newer event to be acknowledged', () => transport.acknowledged.length === 1);
  transport.add(await sealed({ event: older, receivedAt: Date.now(), secretIndex: 0 }, SECRET));
  await waitUntil('the older event to be acknowledged', () => transport.acknowledged.length === 2);
  expect(ran).toEqual([newer.id]);
  expect(
    await webhooks.process(await sealed({ event: older, receivedAt: Date.now(), secretIndex: 0 }, SECRET)),
  ).toBe('duplicate');
});

test('a copy handed out before its time never runs early: one due soon waits in the worker, one due later goes back to the queue, spending nothing', async () => {
  const { transport, webhooks, start, entry } = setup();
  const ran: { attempt: number; at: number }[] = [];
  webhooks.on('user.created', (_event, ctx) => {
    ran.push({ attempt: ctx.attempt, at: Date.now() });
  });
  const soon = Date.now() + 60;
  // Far enough past the 100 ms hold-back line that a loaded machine's slow start still finds it early.
  const later = Date.now() + 1_500;
  transport.add(await entry(), { notBefore: soon });
  transport.add(await entry(), { notBefore: later });
  start();
  await waitUntil('both copies to be acknowledged', () => transport.acknowledged.length === 2);
  const [first, second] = ran.sort((a, b) => a.at - b.at);
  expect(first!.at).toBeGreaterThanOrEqual(soon);
  expect(second!.at).toBeGreaterThanOrEqual(later);
  expect([first!.attempt, second!.attempt]).toEqual([1, 1]);
  // Only the later copy went back, once, for about what remained (within the 100 ms the rule waits for).
  expect(transport.heldBack).toHaveLength(1);
  expect(transport.heldBack[0]!.earlyMs).toBeGreaterThan(100);
  expect(transport.heldBack[0]!.earlyMs).toBeLessThanOrEqual(1_500);
  expect(transport.deadLetters).toHaveLength(0);
});

test('a hold-back the queue refuses is logged with how the copy comes back, and the copy does not run', async () => {
  const { transport, logged, webhooks, start, entry } = setup();
  let runs = 0;
  webhooks.on('user.created', () => {
    runs++;
  });
  transport.failHoldBacks = 1;
  transport.add(await entry(), { notBefore: Date.now() + 5_000 });
  start();
  await waitUntil('the warning', () => logged.some(({ level }) => level === 'warn'));
  const warnings = logged.filter(({ level }) => level !== 'info');
  expect(warnings.map(({ level, message }) => [level, message])).toEqual([
    ['warn', 'webhook inbox: could not hold back a copy received before its time; the job comes back'],
  ]);
  expect((warnings[0]!.record.err as Error).message).toBe('the queue refused the hold-back');
  expect(runs).toBe(0);
  expect(transport.acknowledged).toEqual([]);
});

test('a forced close while a copy waits for its time leaves it unrun and unsettled, for the queue to hand out again', async () => {
  const { transport, webhooks, start, entry } = setup({ holdBackFromMs: 60_000 });
  let runs = 0;
  webhooks.on('user.created', () => {
    runs++;
  });
  transport.add(await entry(), { notBefore: Date.now() + 30_000 });
  const worker = start();
  await waitUntil('the copy to be taken', () => transport.taken.size === 1);
  // Waiting out the 30 s would pass the test's timeout: the close ends the wait, and settles nothing.
  await worker.close(true);
  expect(runs).toBe(0);
  expect(transport.acknowledged).toEqual([]);
  expect(transport.heldBack).toEqual([]);
  expect(transport.taken.size).toBe(1);
});
