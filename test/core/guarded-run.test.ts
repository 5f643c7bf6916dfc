/**
 * The exactly-once engine (src/guarded-run.ts) driven directly: a run kind whose work and answer the
 * test writes, a real ScopedStore over a store that records its calls, fake timers for the lease
 * renewals. Pins what happens when something goes wrong: a renewal that loses the claim, the renewal's
 * stopping rules, fail-open runs that never held a claim, a store answering nonsense, work that settles
 * after its answer (issue 30).
 */
import { MemoryStore, type WebhookError, type WebhookEvent } from 'service-webhooks';
import { createTestEvent } from 'service-webhooks/testing';
import { afterEach, describe, expect, test, vi } from 'vitest';
import type { Accepted } from '../../src/delivery-verifier.js';
import { HandlerFailedError, HandlerTimeoutError } from '../../src/errors.js';
import {
  type Ending,
  ExactlyOnce,
  HANDLED,
  QUEUED,
  Run,
  type RunKind,
  type Work,
} from '../../src/guarded-run.js';
import { Observers } from '../../src/observers.js';
import type { HandlerOutcome } from '../../src/run-handlers.js';
import { ScopedStore } from '../../src/scoped-store.js';
import { SENDER_RETRY_SPAN_MS } from '../../src/sender-schedule.js';
import { SYNCHRONOUS_CALLS, type SynchronousCalls } from '../../src/synchronous-store.js';
import { TimeoutQueue } from '../../src/timeout-queue.js';
import type { ClaimResult, CompleteResult, IdempotencyStore, RenewResult } from '../../src/types.js';
import { SpyStore } from './spy-store.js';

/** What the run kind's `finish` was called with. */
interface Answer {
  readonly code: Ending['code'];
  readonly late: boolean;
  readonly error: WebhookError | undefined;
}

const LEASE_SECONDS = 30;
/** Longer than any test's fake time: no store call here misses its deadline unless a test says so. */
const STORE_TIMEOUT_MS = 24 * 60 * 60 * 1000;
/** Renewals come every third of a lease. */
const RENEW_EVERY_MS = (LEASE_SECONDS * 1000) / 3;

afterEach(() => {
  vi.useRealTimers();
});

/** The verifier's answer for `event`: secret 0, remembered for a minute, received now. */
function accepted(event: WebhookEvent): Accepted {
  return { ok: true, event, secretIndex: 0, rememberMs: 60_000, receivedAt: Date.now() };
}

/** A test event, typed as the engine sees events. */
function anEvent(id?: string): WebhookEvent {
  const event = createTestEvent('user.created') as unknown as WebhookEvent;
  if (id !== undefined) event.id = id;
  return event;
}

function fakeTimers() {
  // hrtime: the core's clock (src/clock.ts).
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance', 'hrtime', 'Date'] });
}

/** A store of plain promises over a MemoryStore; each method may be replaced per test. */
class ScriptedStore extends SpyStore {
  claimAnswer: (() => Promise<ClaimResult>) | undefined;
  completeAnswer: (() => Promise<CompleteResult>) | undefined;
  renewAnswer: (() => Promise<RenewResult>) | undefined;
  releaseAnswer: (() => Promise<void>) | undefined;
  override claim(eventId: string, token: string, leaseMs: number) {
    if (this.claimAnswer) {
      this.calls.push(`claim ${eventId}`);
      return this.claimAnswer();
    }
    return super.claim(eventId, token, leaseMs);
  }
  override complete(eventId: string, token: string, ttlMs: number) {
    if (this.completeAnswer) {
      this.calls.push(`complete ${eventId}`);
      return this.completeAnswer();
    }
    return super.complete(eventId, token, ttlMs);
  }
  override release(eventId: string, token: string) {
    if (this.releaseAnswer) {
      this.calls.push(`release ${eventId}`);
      return this.releaseAnswer();
    }
    return super.release(eventId, token);
  }
  override renew(eventId: string, token: string, leaseMs: number) {
    if (this.renewAnswer) {
      this.calls.push(`renew ${eventId}`);
      return this.renewAnswer();
    }
    return super.renew(eventId, token, leaseMs);
  }
}

interface Setup {
  readonly store?: IdempotencyStore;
  readonly prefixes?: readonly string[] | Promise<readonly string[]>;
  readonly onStoreError?: 'reject' | 'process';
  readonly inboxRun?: boolean;
  readonly work: Work<Answer>;
}

function engine(setup: Setup) {
  const errors: WebhookError[] = [];
  const observers = new Observers(undefined);
  observers.listen((error) => {
    errors.push(error);
  });
  const exactlyOnce = new ExactlyOnce(LEASE_SECONDS, setup.onStoreError ?? 'reject', observers);
  const answers: Answer[] = [];
  const inboxRun = setup.inboxRun ?? false;
  const kind: RunKind<Answer> = {
    engine: exactlyOnce,
    owner: {},
    work: setup.work,
    finish: (one, ending) => {
      const answer = { code: ending.code, late: one.late, error: ending.error };
      answers.push(answer);
      return answer;
    },
    success: inboxRun ? QUEUED : HANDLED,
    inboxRun,
  };
  const inner = setup.store ?? new SpyStore();
  const store = new ScopedStore(inner, setup.prefixes ?? ['p:'], new TimeoutQueue(STORE_TIMEOUT_MS));
  const event = anEvent();
  type RunOptions = { timeoutMs?: number; replayId?: string; from?: WebhookEvent };
  /** The engine's answer as it gives it: a value when every step answered synchronously. */
  const runNow = (options: RunOptions = {}) => {
    const worker =
      options.replayId === undefined
        ? undefined
        : { attempt: 1, signal: undefined, replayId: options.replayId, detach: undefined };
    const one = new Run(kind, store, accepted(options.from ?? event), 0, [], options.timeoutMs ?? 0, worker);
    return exactlyOnce.run(one);
  };
  const run = (options: RunOptions = {}) => Promise.resolve(runNow(options));
  return { errors, answers, run, runNow, event, store: inner };
}

const succeed: Work<Answer> = (run, settle) => settle(run, { kind: 'succeeded' });
const fail: Work<Answer> = (run, settle) =>
  settle(run, { kind: 'failed', error: new HandlerFailedError(new Error('boom')) });

/** Work that runs past its budget and settles with `rest` once `finish` is called. */
function lateWork() {
  let finish!: (outcome: HandlerOutcome) => void;
  const rest = new Promise<HandlerOutcome>((resolve) => {
    finish = resolve;
  });
  const work: Work<Answer> = (run, settle) =>
    settle(run, { kind: 'timed_out', error: new HandlerTimeoutError(20), rest });
  return { work, finish: (outcome: HandlerOutcome) => finish(outcome) };
}

/** The message of an error's cause. */
const causeMessage = (error: WebhookError | undefined) => (error?.cause as Error | undefined)?.message;
const codes = (errors: readonly WebhookError[]) => errors.map((error) => error.code);
const count = (calls: readonly string[], method: string) =>
  calls.filter((call) => call.startsWith(`${method} `)).length;

describe('claim, work, record', () => {
  test('a success completes the claim under the scoped key; the copy after it is a duplicate', async () => {
    const { run, answers, store, event, errors } = engine({ work: succeed });
    expect(await run()).toEqual({ code: 'handled', late: false, error: undefined });
    expect(await run()).toEqual({ code: 'duplicate', late: false, error: undefined });
    expect((store as SpyStore).calls).toEqual([
      `claim p:${event.id}`,
      `complete p:${event.id}`,
      `claim p:${event.id}`,
    ]);
    expect(answers).toHaveLength(2);
    expect(errors).toEqual([]);
  });

  test('a copy while the first still holds the claim is in progress, with the lease as Retry-After', async () => {
    const held = lateWork();
    const { run, errors } = engine({ work: held.work });
    await run();
    const second = await run();
    expect(second).toMatchObject({ code: 'event_in_progress', late: false });
    expect(second.error).toMatchObject({ retryAfterSeconds: LEASE_SECONDS });
    expect(codes(errors)).toEqual(['handler_timeout']);
    held.finish({ kind: 'succeeded' });
  });

  test('a failure releases the claim and answers its error; the retry runs', async () => {
    const spy = new SpyStore();
    let calls = 0;
    const { run, errors, event } = engine({
      store: spy,
      work: (one, settle) => (++calls === 1 ? fail(one, settle) : succeed(one, settle)),
    });
    const first = await run();
    expect(first.code).toBe('handler_failed');
    expect(codes(errors)).toEqual(['handler_failed']);
    expect(spy.calls).toEqual([`claim p:${event.id}`, `release p:${event.id}`]);
    expect((await run()).code).toBe('handled');
  });

  test('the MemoryStore is called synchronously: the answer is there without waiting', () => {
    const { runNow, errors } = engine({ store: new MemoryStore(), work: succeed });
    expect(runNow()).toEqual({ code: 'handled', late: false, error: undefined });
    expect(runNow()).toEqual({ code: 'duplicate', late: false, error: undefined });
    expect(errors).toEqual([]);
  });

  test('a scope still being derived is waited for, then claimed under it', async () => {
    const spy = new SpyStore();
    const { run, event } = engine({ store: spy, prefixes: Promise.resolve(['derived:']), work: succeed });
    expect((await run()).code).toBe('handled');
    expect(spy.calls).toEqual([`claim derived:${event.id}`, `complete derived:${event.id}`]);
  });

  test('a scope that fails to derive is a store failure, and nothing is released (no key was made)', async () => {
    const spy = new SpyStore();
    const { run, errors } = engine({
      store: spy,
      prefixes: Promise.reject(new Error('no Web Crypto')),
      work: succeed,
    });
    const answer = await run();
    expect(answer.code).toBe('store_unavailable');
    expect(causeMessage(answer.error)).toBe('no Web Crypto');
    expect(codes(errors)).toEqual(['store_unavailable']);
    expect(spy.calls).toEqual([]);
  });

  test('inbox runs are keyed apart from the door, and a replay apart from the run', async () => {
    const spy = new SpyStore();
    const { run, event } = engine({ store: spy, inboxRun: true, work: succeed });
    expect((await run()).code).toBe('queued');
    expect((await run({ replayId: 'rpl_1' })).code).toBe('queued');
    expect(spy.calls).toEqual([
      `claim !p:${event.id}`,
      `complete !p:${event.id}`,
      `claim !rpl_1!p:${event.id}`,
      `complete !rpl_1!p:${event.id}`,
    ]);
  });

  test('the claim is made under the id as verified, whatever the work does to the event', async () => {
    const spy = new SpyStore();
    const event = anEvent('evt_as_verified');
    const { run } = engine({
      store: spy,
      work: (one, settle) => {
        one.event.id = 'evt_changed_by_a_handler';
        return settle(one, { kind: 'succeeded' });
      },
    });
    await run({ from: event });
    expect(event.id).toBe('evt_changed_by_a_handler');
    expect(spy.calls).toEqual(['claim p:evt_as_verified', 'complete p:evt_as_verified']);
  });
});

describe('a store that fails or answers nonsense', () => {
  test('an unknown claim state is a store failure, and the key is released in case it was taken', async () => {
    const store = new ScriptedStore();
    store.claimAnswer = () => Promise.resolve('maybe' as ClaimResult);
    let ran = false;
    const { run, errors, event } = engine({
      store,
      work: (one, settle) => {
        ran = true;
        return settle(one, { kind: 'succeeded' });
      },
    });
    const answer = await run();
    expect(answer).toMatchObject({ code: 'store_unavailable', late: false });
    expect(answer.error?.message).toBe('The store failed to claim the event.');
    expect(answer.error?.cause).toBeInstanceOf(TypeError);
    expect(causeMessage(answer.error)).toBe('store.claim answered "maybe"');
    expect(codes(errors)).toEqual(['store_unavailable']);
    expect(ran).toBe(false);
    expect(store.calls).toEqual([`claim p:${event.id}`, `release p:${event.id}`]);
  });

  test('a claim that throws synchronously is a store failure (a full MemoryStore)', async () => {
    const full = new MemoryStore();
    full.claim = () => {
      throw new Error('the memory store is full');
    };
    const { run, errors } = engine({ store: full, work: succeed });
    const answer = await run();
    expect(answer.code).toBe('store_unavailable');
    expect(causeMessage(answer.error)).toBe('the memory store is full');
    expect(codes(errors)).toEqual(['store_unavailable']);
  });

  test('a release that fails after a failure is reported, and the failure still answers', async () => {
    const store = new ScriptedStore();
    store.releaseAnswer = () => Promise.reject(new Error('release refused'));
    const { run, errors } = engine({ store, work: fail });
    const answer = await run();
    expect(answer.code).toBe('handler_failed');
    expect(codes(errors)).toEqual(['handler_failed', 'store_unavailable']);
    expect(errors[1]?.message).toBe('The store failed to release the claim.');
    expect(causeMessage(errors[1])).toBe('release refused');
  });

  test('a release that throws synchronously is treated as one that rejects', async () => {
    const throwing = new MemoryStore();
    throwing.release = () => {
      throw new Error('release threw');
    };
    const { run, errors } = engine({ store: throwing, work: fail });
    expect((await run()).code).toBe('handler_failed');
    expect(codes(errors)).toEqual(['handler_failed', 'store_unavailable']);
    expect(causeMessage(errors[1])).toBe('release threw');
  });

  test('a completion that fails still acknowledges the work done, and says the record is missing', async () => {
    const store = new ScriptedStore();
    store.completeAnswer = () => Promise.reject(new Error('complete refused'));
    const { run, errors } = engine({ store, work: succeed });
    expect(await run()).toEqual({ code: 'handled', late: false, error: undefined });
    expect(codes(errors)).toEqual(['store_unavailable']);
    expect(errors[0]?.message).toBe('The store failed to record the event as handled.');
    expect(causeMessage(errors[0])).toBe('complete refused');
  });

  test('a completion that throws synchronously is treated as one that rejects', async () => {
    const throwing = new MemoryStore();
    throwing.complete = () => {
      throw new Error('complete threw');
    };
    const { run, errors } = engine({ store: throwing, work: succeed });
    expect((await run()).code).toBe('handled');
    expect(codes(errors)).toEqual(['store_unavailable']);
    expect(causeMessage(errors[0])).toBe('complete threw');
  });

  test('a completion that finds the claim taken over is reported as a lost lease; the work is acknowledged', async () => {
    const store = new ScriptedStore();
    store.completeAnswer = () => Promise.resolve('lost');
    const { run, errors, event } = engine({ store, work: succeed });
    expect((await run()).code).toBe('handled');
    expect(codes(errors)).toEqual(['lease_lost']);
    expect(errors[0]?.message).toContain(event.id);
  });
});

/** A store that answers synchronously, as the MemoryStore does, with some calls replaced. */
function synchronousStore(overrides: Partial<SynchronousCalls>): IdempotencyStore & { calls: string[] } {
  const memory = new MemoryStore();
  const calls: string[] = [];
  const own = memory[SYNCHRONOUS_CALLS]()!;
  const recorded = <Name extends keyof SynchronousCalls>(name: Name): SynchronousCalls[Name] => {
    // The memory store's calls are methods: bound to it when not overridden.
    const call = (overrides[name] ?? own[name].bind(own)) as (...args: unknown[]) => unknown;
    return ((key: string, ...rest: unknown[]) => {
      calls.push(`${name} ${key}`);
      return call(key, ...rest);
    }) as SynchronousCalls[Name];
  };
  const sync: SynchronousCalls = {
    claim: recorded('claim'),
    complete: recorded('complete'),
    release: recorded('release'),
    renew: recorded('renew'),
  };
  return {
    calls,
    claim: async (key, token, leaseMs) => sync.claim(key, token, leaseMs),
    complete: async (key, token, ttlMs) => sync.complete(key, token, ttlMs),
    release: async (key, token) => sync.release(key, token),
    renew: async (key, token, leaseMs) => sync.renew(key, token, leaseMs),
    [SYNCHRONOUS_CALLS]: () => sync,
  } as IdempotencyStore & { calls: string[] };
}

describe('a store that answers synchronously and throws', () => {
  test('a full MemoryStore refuses the claim at once: a store failure, answered without running the work', async () => {
    const full = new MemoryStore({ maxInProgress: 1 });
    await full.claim('p:evt_elsewhere', 'other', 60_000);
    let worked = false;
    const { runNow, errors } = engine({
      store: full,
      work: (run, settle) => {
        worked = true;
        return settle(run, { kind: 'succeeded' });
      },
    });
    // The scoped store answers the throw as a rejection, so the answer comes a microtask later.
    const answer = runNow();
    expect(answer).toBeInstanceOf(Promise);
    expect((await answer).code).toBe('store_unavailable');
    expect(worked).toBe(false);
    expect(codes(errors)).toEqual(['store_unavailable']);
    expect(causeMessage(errors[0])).toMatch(/maxInProgress/);
  });

  test('a completion that throws is a failure to record; the work is acknowledged', async () => {
    const store = synchronousStore({
      complete: () => {
        throw new Error('complete threw');
      },
    });
    const { run, errors } = engine({ store, work: succeed });
    expect(await run()).toEqual({ code: 'handled', late: false, error: undefined });
    expect(codes(errors)).toEqual(['store_unavailable']);
    expect(causeMessage(errors[0])).toBe('complete threw');
  });

  test('a release that throws is a failure to release; the failure still answers', async () => {
    const store = synchronousStore({
      release: () => {
        throw new Error('release threw');
      },
    });
    const { run, errors } = engine({ store, work: fail });
    expect(await run()).toMatchObject({ code: 'handler_failed', late: false });
    expect(codes(errors)).toEqual(['handler_failed', 'store_unavailable']);
    expect(causeMessage(errors[1])).toBe('release threw');
  });

  test('a claim that throws, then a release that throws: the claim failure answers', async () => {
    const store = synchronousStore({
      claim: () => {
        throw new Error('claim threw');
      },
      release: () => {
        throw new Error('release threw');
      },
    });
    const { run, errors, event } = engine({ store, work: succeed });
    expect(await run()).toMatchObject({ code: 'store_unavailable', late: false });
    expect(codes(errors)).toEqual(['store_unavailable']);
    expect(causeMessage(errors[0])).toBe('claim threw');
    expect(store.calls).toEqual([`claim p:${event.id}`, `release p:${event.id}`]);
  });
});

describe('the release after a failed claim is quiet', () => {
  test('its rejection is caught: no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const store = new ScriptedStore();
      store.claimAnswer = () => Promise.reject(new Error('claim refused'));
      store.releaseAnswer = () => Promise.reject(new Error('release refused'));
      const { run, errors, event } = engine({ store, work: succeed });
      expect((await run()).code).toBe('store_unavailable');
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(unhandled).toEqual([]);
      expect(codes(errors)).toEqual(['store_unavailable']);
      expect(store.calls).toEqual([`claim p:${event.id}`, `release p:${event.id}`]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe("fail-open runs (onStoreError: 'process') never held a claim", () => {
  test('the work runs; its success records nothing in the store', async () => {
    const store = new ScriptedStore();
    store.claimAnswer = () => Promise.reject(new Error('claim refused'));
    const { run, errors, event } = engine({ store, onStoreError: 'process', work: succeed });
    expect(await run()).toEqual({ code: 'handled', late: false, error: undefined });
    expect(codes(errors)).toEqual(['store_unavailable']);
    // The release is of the claim that may yet land (Redis runs what it was sent); no completion.
    expect(store.calls).toEqual([`claim p:${event.id}`, `release p:${event.id}`]);
  });

  test('its failure releases nothing more', async () => {
    const store = new ScriptedStore();
    store.claimAnswer = () => Promise.reject(new Error('claim refused'));
    const { run, errors, event } = engine({ store, onStoreError: 'process', work: fail });
    expect((await run()).code).toBe('handler_failed');
    expect(codes(errors)).toEqual(['store_unavailable', 'handler_failed']);
    expect(store.calls).toEqual([`claim p:${event.id}`, `release p:${event.id}`]);
  });

  test('work past its budget renews nothing, and its late success records nothing', async () => {
    fakeTimers();
    const store = new ScriptedStore();
    store.claimAnswer = () => Promise.reject(new Error('claim refused'));
    const late = lateWork();
    const { run, answers, event } = engine({ store, onStoreError: 'process', work: late.work });
    expect((await run()).code).toBe('handler_timeout');
    await vi.advanceTimersByTimeAsync(RENEW_EVERY_MS * 3);
    late.finish({ kind: 'succeeded' });
    await vi.advanceTimersByTimeAsync(0);
    expect(answers.map(({ code, late }) => [code, late])).toEqual([
      ['handler_timeout', false],
      ['handled', true],
    ]);
    expect(store.calls).toEqual([`claim p:${event.id}`, `release p:${event.id}`]);
  });

  test('an inbox run never fails open: the queue retries it', async () => {
    const store = new ScriptedStore();
    store.claimAnswer = () => Promise.reject(new Error('claim refused'));
    let ran = false;
    const { run } = engine({
      store,
      onStoreError: 'process',
      inboxRun: true,
      work: (one, settle) => {
        ran = true;
        return settle(one, { kind: 'succeeded' });
      },
    });
    expect((await run()).code).toBe('store_unavailable');
    expect(ran).toBe(false);
  });

  test("with 'reject', the work does not run", async () => {
    const store = new ScriptedStore();
    store.claimAnswer = () => Promise.reject(new Error('claim refused'));
    let ran = false;
    const { run } = engine({
      store,
      work: (one, settle) => {
        ran = true;
        return settle(one, { kind: 'succeeded' });
      },
    });
    expect(await run()).toMatchObject({ code: 'store_unavailable', late: false });
    expect(ran).toBe(false);
  });
});

describe('work that settles after its answer', () => {
  test('answers the timeout now; a late success completes the claim and is answered late', async () => {
    fakeTimers();
    const spy = new SpyStore();
    const late = lateWork();
    const { run, answers, errors, event } = engine({ store: spy, work: late.work });
    const answer = await run();
    expect(answer).toMatchObject({ code: 'handler_timeout', late: false });
    expect(codes(errors)).toEqual(['handler_timeout']);
    late.finish({ kind: 'succeeded' });
    await vi.advanceTimersByTimeAsync(0);
    expect(answers.slice(1)).toEqual([{ code: 'handled', late: true, error: undefined }]);
    // Renewed once at the timeout (the claim is kept while the work runs), then completed.
    expect(spy.calls).toEqual([`claim p:${event.id}`, `renew p:${event.id}`, `complete p:${event.id}`]);
    expect(codes(errors)).toEqual(['handler_timeout']);
  });

  test('a late failure releases the claim and is answered late with its error', async () => {
    fakeTimers();
    const spy = new SpyStore();
    const late = lateWork();
    const { run, answers, errors, event } = engine({ store: spy, work: late.work });
    await run();
    late.finish({ kind: 'failed', error: new HandlerFailedError(new Error('late boom')) });
    await vi.advanceTimersByTimeAsync(0);
    expect(answers.slice(1).map(({ code, late }) => [code, late])).toEqual([['handler_failed', true]]);
    expect(codes(errors)).toEqual(['handler_timeout', 'handler_failed']);
    expect(spy.calls).toEqual([`claim p:${event.id}`, `renew p:${event.id}`, `release p:${event.id}`]);
  });

  test('a late completion that fails is reported and still answered late as handled', async () => {
    fakeTimers();
    const store = new ScriptedStore();
    store.completeAnswer = () => Promise.reject(new Error('complete refused'));
    const late = lateWork();
    const { run, answers, errors } = engine({ store, work: late.work });
    await run();
    late.finish({ kind: 'succeeded' });
    await vi.advanceTimersByTimeAsync(0);
    expect(answers.slice(1).map(({ code, late }) => [code, late])).toEqual([['handled', true]]);
    expect(codes(errors)).toEqual(['handler_timeout', 'store_unavailable']);
    expect(causeMessage(errors[1])).toBe('complete refused');
  });

  test('a late completion that finds the claim lost is reported once as lost, answered late as handled', async () => {
    fakeTimers();
    const store = new ScriptedStore();
    store.completeAnswer = () => Promise.resolve('lost');
    const late = lateWork();
    const { run, answers, errors } = engine({ store, work: late.work });
    await run();
    late.finish({ kind: 'succeeded' });
    await vi.advanceTimersByTimeAsync(0);
    expect(answers.slice(1).map(({ code, late }) => [code, late])).toEqual([['handled', true]]);
    expect(codes(errors)).toEqual(['handler_timeout', 'lease_lost']);
  });
});

describe('lease renewal of work past its answer', () => {
  test('renewed every third of a lease while the work runs, fenced by the claim token; stops once it settles', async () => {
    fakeTimers();
    const spy = new SpyStore();
    const late = lateWork();
    const { run, event } = engine({ store: spy, work: late.work });
    await run();
    // Renewed at once when the answer goes out (the claim is as old as the run), then every third.
    expect(count(spy.calls, 'renew')).toBe(1);
    await vi.advanceTimersByTimeAsync(RENEW_EVERY_MS - 1);
    expect(count(spy.calls, 'renew')).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(count(spy.calls, 'renew')).toBe(2);
    await vi.advanceTimersByTimeAsync(RENEW_EVERY_MS * 2);
    expect(count(spy.calls, 'renew')).toBe(4);
    // The renewals held the claim: another attempt, long past the first lease, finds it in progress.
    expect(await spy.inner.claim(`p:${event.id}`, 'another token', 1_000)).toBe('in_progress');
    late.finish({ kind: 'succeeded' });
    await vi.advanceTimersByTimeAsync(RENEW_EVERY_MS * 5);
    expect(count(spy.calls, 'renew')).toBe(4);
    expect(count(spy.calls, 'complete')).toBe(1);
  });

  test('a renewal that finds the claim taken over reports a lost lease once and stops renewing', async () => {
    fakeTimers();
    const store = new ScriptedStore();
    store.renewAnswer = () => Promise.resolve('lost');
    store.completeAnswer = () => Promise.resolve('lost');
    const late = lateWork();
    const { run, errors, answers } = engine({ store, work: late.work });
    await run();
    await vi.advanceTimersByTimeAsync(RENEW_EVERY_MS * 5);
    expect(count(store.calls, 'renew')).toBe(1);
    expect(codes(errors)).toEqual(['handler_timeout', 'lease_lost']);
    // The late completion finds the claim lost too: not reported a second time.
    late.finish({ kind: 'succeeded' });
    await vi.advanceTimersByTimeAsync(0);
    expect(codes(errors)).toEqual(['handler_timeout', 'lease_lost']);
    expect(answers.slice(1).map(({ code, late }) => [code, late])).toEqual([['handled', true]]);
  });

  test('a renewal that fails is reported and tried again a third of a lease later', async () => {
    fakeTimers();
    const store = new ScriptedStore();
    let failures = 2;
    store.renewAnswer = () =>
      failures-- > 0 ? Promise.reject(new Error('renew refused')) : Promise.resolve('renewed');
    const late = lateWork();
    const { run, errors } = engine({ store, work: late.work });
    await run();
    await vi.advanceTimersByTimeAsync(RENEW_EVERY_MS * 4 - 1);
    expect(count(store.calls, 'renew')).toBe(4);
    expect(codes(errors)).toEqual(['handler_timeout', 'store_unavailable', 'store_unavailable']);
    expect(errors[1]?.message).toBe('The store failed to renew the claim of handlers still running.');
    expect(causeMessage(errors[1])).toBe('renew refused');
    late.finish({ kind: 'succeeded' });
    await vi.advanceTimersByTimeAsync(0);
  });

  test('a renewal answered after the work settled schedules no more', async () => {
    fakeTimers();
    const store = new ScriptedStore();
    const answerRenewal: ((result: RenewResult) => void)[] = [];
    store.renewAnswer = () =>
      new Promise<RenewResult>((resolve) => {
        answerRenewal.push(resolve);
      });
    const late = lateWork();
    const { run, answers } = engine({ store, work: late.work });
    await run();
    // The renewal made at the timeout is still unanswered when the work settles.
    expect(count(store.calls, 'renew')).toBe(1);
    late.finish({ kind: 'succeeded' });
    await vi.advanceTimersByTimeAsync(0);
    expect(answers.at(-1)).toMatchObject({ code: 'handled', late: true });
    answerRenewal[0]!('renewed');
    await vi.advanceTimersByTimeAsync(RENEW_EVERY_MS * 5);
    expect(count(store.calls, 'renew')).toBe(1);
  });

  test('work that settles before its first renewal is answered is still recorded late', async () => {
    fakeTimers();
    const spy = new SpyStore();
    const first = lateWork();
    let second = false;
    const { run, answers } = engine({
      store: spy,
      work: (one, settle) =>
        second
          ? settle(one, {
              kind: 'timed_out',
              error: new HandlerTimeoutError(20),
              rest: Promise.resolve({ kind: 'succeeded' }),
            })
          : first.work(one, settle),
    });
    // A first run's renewal puts the engine's renewal timer in place.
    await run();
    await vi.advanceTimersByTimeAsync(RENEW_EVERY_MS);
    second = true;
    const other = anEvent();
    await run({ from: other });
    await vi.advanceTimersByTimeAsync(0);
    expect(answers.map(({ code, late }) => [code, late])).toEqual([
      ['handler_timeout', false],
      ['handler_timeout', false],
      ['handled', true],
    ]);
    expect(spy.calls.filter((call) => call.includes(other.id))).toEqual([
      `claim p:${other.id}`,
      `renew p:${other.id}`,
      `complete p:${other.id}`,
    ]);
    first.finish({ kind: 'succeeded' });
    await vi.advanceTimersByTimeAsync(0);
  });

  test('renewal stops once the sender can no longer retry', async () => {
    fakeTimers();
    const spy = new SpyStore();
    const late = lateWork();
    const { run } = engine({ store: spy, work: late.work });
    await run();
    await vi.advanceTimersByTimeAsync(SENDER_RETRY_SPAN_MS - RENEW_EVERY_MS / 2);
    const renewed = count(spy.calls, 'renew');
    expect(renewed).toBe(1 + Math.floor((SENDER_RETRY_SPAN_MS - RENEW_EVERY_MS / 2) / RENEW_EVERY_MS));
    await vi.advanceTimersByTimeAsync(RENEW_EVERY_MS * 10);
    // One more: the renewal due just before the span ends; none after it.
    expect(count(spy.calls, 'renew')).toBe(renewed + 1);
    late.finish({ kind: 'succeeded' });
    await vi.advanceTimersByTimeAsync(0);
  });

  test('a store without renew is never renewed, and its late success is still recorded', async () => {
    fakeTimers();
    const inner = new SpyStore();
    const withoutRenew: IdempotencyStore = {
      claim: (key, token, leaseMs) => inner.claim(key, token, leaseMs),
      complete: (key, token, ttlMs) => inner.complete(key, token, ttlMs),
      release: (key, token) => inner.release(key, token),
    };
    const late = lateWork();
    const { run, answers, errors } = engine({ store: withoutRenew, work: late.work });
    await run();
    await vi.advanceTimersByTimeAsync(RENEW_EVERY_MS * 4);
    late.finish({ kind: 'succeeded' });
    await vi.advanceTimersByTimeAsync(0);
    expect(count(inner.calls, 'renew')).toBe(0);
    // Not even tried: a renewal tried on such a store would fail and be reported.
    expect(codes(errors)).toEqual(['handler_timeout']);
    expect(count(inner.calls, 'complete')).toBe(1);
    expect(answers.at(-1)).toMatchObject({ code: 'handled', late: true });
  });
});

describe("an inbox worker's run is renewed from its start", () => {
  test('for its budget plus the sender span, every third of a lease, until it settles', async () => {
    fakeTimers();
    const spy = new SpyStore();
    let done!: (outcome: HandlerOutcome) => void;
    const { run, answers } = engine({
      store: spy,
      inboxRun: true,
      work: (one, settle) =>
        new Promise<HandlerOutcome>((resolve) => {
          done = resolve;
        }).then((outcome) => settle(one, outcome)),
    });
    const answer = run({ timeoutMs: 120_000 });
    await vi.advanceTimersByTimeAsync(RENEW_EVERY_MS * 2);
    expect(count(spy.calls, 'renew')).toBe(2);
    done({ kind: 'succeeded' });
    expect((await answer).code).toBe('queued');
    await vi.advanceTimersByTimeAsync(RENEW_EVERY_MS * 3);
    expect(count(spy.calls, 'renew')).toBe(2);
    expect(answers).toHaveLength(1);
  });

  test('the budget extends the renewals past the sender span', async () => {
    fakeTimers();
    const spy = new SpyStore();
    let done!: (outcome: HandlerOutcome) => void;
    const { run } = engine({
      store: spy,
      inboxRun: true,
      work: (one, settle) =>
        new Promise<HandlerOutcome>((resolve) => {
          done = resolve;
        }).then((outcome) => settle(one, outcome)),
    });
    const budget = RENEW_EVERY_MS * 20;
    const answer = run({ timeoutMs: budget });
    await vi.advanceTimersByTimeAsync(SENDER_RETRY_SPAN_MS + budget - RENEW_EVERY_MS / 2);
    const renewed = count(spy.calls, 'renew');
    expect(renewed).toBe(Math.floor((SENDER_RETRY_SPAN_MS + budget - RENEW_EVERY_MS / 2) / RENEW_EVERY_MS));
    await vi.advanceTimersByTimeAsync(RENEW_EVERY_MS * 10);
    expect(count(spy.calls, 'renew')).toBe(renewed + 1);
    done({ kind: 'succeeded' });
    await answer;
  });

  test('its timeout does not start a second renewal', async () => {
    fakeTimers();
    const spy = new SpyStore();
    const late = lateWork();
    const { run } = engine({
      store: spy,
      inboxRun: true,
      work: (one, settle) =>
        new Promise<void>((resolve) => setTimeout(resolve, RENEW_EVERY_MS / 2)).then(() =>
          late.work(one, settle),
        ),
    });
    const answer = run({ timeoutMs: RENEW_EVERY_MS / 2 });
    await vi.advanceTimersByTimeAsync(RENEW_EVERY_MS / 2);
    expect((await answer).code).toBe('handler_timeout');
    await vi.advanceTimersByTimeAsync(RENEW_EVERY_MS * 3);
    expect(count(spy.calls, 'renew')).toBe(3);
    late.finish({ kind: 'succeeded' });
    await vi.advanceTimersByTimeAsync(RENEW_EVERY_MS * 3);
    expect(count(spy.calls, 'renew')).toBe(3);
  });

  test('a store without renew: no renewal from the start either', async () => {
    fakeTimers();
    const inner = new SpyStore();
    const withoutRenew: IdempotencyStore = {
      claim: (key, token, leaseMs) => inner.claim(key, token, leaseMs),
      complete: (key, token, ttlMs) => inner.complete(key, token, ttlMs),
      release: (key, token) => inner.release(key, token),
    };
    let done!: (outcome: HandlerOutcome) => void;
    const { run, errors } = engine({
      store: withoutRenew,
      inboxRun: true,
      work: (one, settle) =>
        new Promise<HandlerOutcome>((resolve) => {
          done = resolve;
        }).then((outcome) => settle(one, outcome)),
    });
    const answer = run({ timeoutMs: 120_000 });
    await vi.advanceTimersByTimeAsync(RENEW_EVERY_MS * 3);
    done({ kind: 'succeeded' });
    expect((await answer).code).toBe('queued');
    expect(count(inner.calls, 'renew')).toBe(0);
    expect(errors).toEqual([]);
  });
});
