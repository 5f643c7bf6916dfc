/**
 * The receiver's view of its store (src/scoped-store.ts): keys of a dedup scope, the calls under a
 * deadline, and a rotation's several keys, claimed in order, completed and released together. A key
 * found held elsewhere must be released, not recorded as handled; one found handled is recorded under
 * every key (issue 30).
 */
import { MemoryStore } from 'service-webhooks';
import { describe, expect, test } from 'vitest';
import { ScopedStore } from '../../src/scoped-store.js';
import { TimeoutQueue } from '../../src/timeout-queue.js';
import type { ClaimResult, CompleteResult, IdempotencyStore, RenewResult } from '../../src/types.js';

type Method = 'claim' | 'complete' | 'release' | 'renew';

/**
 * A store of promises that records every call with its arguments, over a MemoryStore, unless a
 * per-key answer is scripted (a value, a rejection, or a throw).
 */
class RecordingStore implements IdempotencyStore {
  readonly calls: string[] = [];
  readonly inner = new MemoryStore();
  readonly script: Partial<Record<string, () => unknown>> = {};

  #call<T>(method: Method, key: string, args: unknown[], real: () => Promise<T>): Promise<T> {
    this.calls.push(`${method} ${[key, ...args].join(' ')}`);
    const scripted = this.script[`${method} ${key}`];
    return scripted ? (scripted() as Promise<T>) : real();
  }
  claim(key: string, token: string, leaseMs: number): Promise<ClaimResult> {
    return this.#call('claim', key, [token, leaseMs], () => this.inner.claim(key, token, leaseMs));
  }
  complete(key: string, token: string, ttlMs: number): Promise<CompleteResult> {
    return this.#call('complete', key, [token, ttlMs], () => this.inner.complete(key, token, ttlMs));
  }
  release(key: string, token: string): Promise<void> {
    return this.#call('release', key, [token], () => this.inner.release(key, token));
  }
  renew(key: string, token: string, leaseMs: number): Promise<RenewResult> {
    return this.#call('renew', key, [token, leaseMs], () => this.inner.renew(key, token, leaseMs));
  }
}

const deadlines = (ms = 1_000) => new TimeoutQueue(ms);
const flush = () => new Promise((resolve) => setTimeout(resolve, 5));

describe('keys of a scope', () => {
  test('one prefix: one key; a rotation: one key per prefix, in order', () => {
    const store = new MemoryStore();
    expect(new ScopedStore(store, ['a:'], deadlines()).keyFor('evt_1')).toBe('a:evt_1');
    expect(new ScopedStore(store, ['new:', 'old:'], deadlines()).keyFor('evt_1')).toEqual([
      'new:evt_1',
      'old:evt_1',
    ]);
  });

  test('inbox runs are keyed apart from the door, and a replay apart from both', () => {
    const one = new ScopedStore(new MemoryStore(), ['a:'], deadlines());
    expect(one.runKeyFor('evt_1', undefined)).toBe('!a:evt_1');
    expect(one.runKeyFor('evt_1', 'rpl_9')).toBe('!rpl_9!a:evt_1');
    const two = new ScopedStore(new MemoryStore(), ['new:', 'old:'], deadlines());
    expect(two.runKeyFor('evt_1', undefined)).toEqual(['!new:evt_1', '!old:evt_1']);
    expect(two.runKeyFor('evt_1', 'rpl_9')).toEqual(['!rpl_9!new:evt_1', '!rpl_9!old:evt_1']);
  });

  test('while the scope is derived there is no key; once derived, there is', async () => {
    let derive!: (prefixes: readonly string[]) => void;
    const scoped = new ScopedStore(
      new MemoryStore(),
      new Promise<readonly string[]>((resolve) => {
        derive = resolve;
      }),
      deadlines(),
    );
    expect(scoped.keyFor('evt_1')).toBeUndefined();
    expect(scoped.runKeyFor('evt_1', undefined)).toBeUndefined();
    const prefixes = scoped.prefixes;
    derive(['#derived:']);
    expect(await prefixes).toEqual(['#derived:']);
    expect(scoped.keyFor('evt_1')).toBe('#derived:evt_1');
    expect(await scoped.prefixes).toEqual(['#derived:']);
  });

  test('prefixes known at once are answered as a promise too', async () => {
    expect(await new ScopedStore(new MemoryStore(), ['a:'], deadlines()).prefixes).toEqual(['a:']);
  });

  test('whether the store renews', () => {
    expect(new ScopedStore(new MemoryStore(), ['a:'], deadlines()).renews).toBe(true);
    const withoutRenew: IdempotencyStore = {
      claim: () => Promise.resolve('claimed'),
      complete: () => Promise.resolve('completed'),
      release: () => Promise.resolve(),
    };
    expect(new ScopedStore(withoutRenew, ['a:'], deadlines()).renews).toBe(false);
  });
});

describe('one key', () => {
  test('the MemoryStore answers synchronously; another store through promises with the same answers', async () => {
    const memory = new ScopedStore(new MemoryStore(), ['a:'], deadlines());
    expect(memory.claim('a:evt_1', 'tok', 1_000, 5_000)).toBe('claimed');
    expect(memory.claim('a:evt_1', 'other', 1_000, 5_000)).toBe('in_progress');
    expect(memory.complete('a:evt_1', 'tok', 5_000)).toBe('completed');
    expect(memory.release('a:evt_1', 'tok')).toBeUndefined();
    expect(memory.claim('a:evt_1', 'other', 1_000, 5_000)).toBe('completed');

    const recording = new RecordingStore();
    const scoped = new ScopedStore(recording, ['a:'], deadlines());
    const claimed = scoped.claim('a:evt_1', 'tok', 1_000, 5_000);
    expect(claimed).toBeInstanceOf(Promise);
    expect(await claimed).toBe('claimed');
    expect(await scoped.renew('a:evt_1', 'tok', 2_000)).toBe('renewed');
    expect(await scoped.renew('a:evt_1', 'other', 2_000)).toBe('lost');
    expect(await scoped.complete('a:evt_1', 'tok', 5_000)).toBe('completed');
    await scoped.release('a:evt_1', 'tok');
    expect(recording.calls).toEqual([
      'claim a:evt_1 tok 1000',
      'renew a:evt_1 tok 2000',
      'renew a:evt_1 other 2000',
      'complete a:evt_1 tok 5000',
      'release a:evt_1 tok',
    ]);
  });

  test.each([
    ['claim', (s: ScopedStore) => s.claim('a:evt_1', 'tok', 1_000, 5_000)],
    ['complete', (s: ScopedStore) => s.complete('a:evt_1', 'tok', 5_000)],
    ['release', (s: ScopedStore) => s.release('a:evt_1', 'tok')],
    ['renew', (s: ScopedStore) => s.renew('a:evt_1', 'tok', 1_000)],
  ] as const)('a store whose %s hangs misses its deadline, named', async (method, call) => {
    const recording = new RecordingStore();
    recording.script[`${method} a:evt_1`] = () => new Promise(() => {});
    const scoped = new ScopedStore(recording, ['a:'], deadlines(10));
    await expect(call(scoped)).rejects.toThrow(`store.${method} did not answer within 10 ms.`);
  });

  test.each([
    ['claim', (s: ScopedStore) => s.claim('a:evt_1', 'tok', 1_000, 5_000)],
    ['complete', (s: ScopedStore) => s.complete('a:evt_1', 'tok', 5_000)],
    ['release', (s: ScopedStore) => s.release('a:evt_1', 'tok')],
    ['renew', (s: ScopedStore) => s.renew('a:evt_1', 'tok', 1_000)],
  ] as const)('a store whose %s throws is treated as one that rejects', async (method, call) => {
    const recording = new RecordingStore();
    recording.script[`${method} a:evt_1`] = () => {
      throw new Error(`${method} threw`);
    };
    const scoped = new ScopedStore(recording, ['a:'], deadlines());
    const pending = call(scoped);
    expect(pending).toBeInstanceOf(Promise);
    await expect(pending).rejects.toThrow(`${method} threw`);
  });
});

describe("a rotation's keys", () => {
  const KEYS = ['new:evt_1', 'old:evt_1'] as const;
  const rotation = () => {
    const recording = new RecordingStore();
    return { recording, scoped: new ScopedStore(recording, ['new:', 'old:'], deadlines()) };
  };

  test('are all claimed, one after another, through promises even over a MemoryStore', async () => {
    const memory = new MemoryStore();
    const overMemory = new ScopedStore(memory, ['new:', 'old:'], deadlines());
    const claimed = overMemory.claim([...KEYS], 'tok', 1_000, 5_000);
    expect(claimed).toBeInstanceOf(Promise);
    expect(await claimed).toBe('claimed');
    expect(await memory.claim('old:evt_1', 'other', 1_000)).toBe('in_progress');

    const { recording, scoped } = rotation();
    expect(await scoped.claim([...KEYS], 'tok', 1_000, 5_000)).toBe('claimed');
    expect(recording.calls).toEqual(['claim new:evt_1 tok 1000', 'claim old:evt_1 tok 1000']);
  });

  test('a first key held elsewhere stops there: the second is not claimed', async () => {
    const { recording, scoped } = rotation();
    await recording.inner.claim('new:evt_1', 'other', 1_000);
    expect(await scoped.claim([...KEYS], 'tok', 1_000, 5_000)).toBe('in_progress');
    expect(recording.calls).toEqual(['claim new:evt_1 tok 1000']);
  });

  test('a second key held elsewhere: the first is released, not recorded as handled', async () => {
    const { recording, scoped } = rotation();
    await recording.inner.claim('old:evt_1', 'other', 1_000);
    expect(await scoped.claim([...KEYS], 'tok', 1_000, 5_000)).toBe('in_progress');
    expect(recording.calls).toEqual([
      'claim new:evt_1 tok 1000',
      'claim old:evt_1 tok 1000',
      'release new:evt_1 tok',
    ]);
    // Released: a later attempt may claim it.
    expect(await recording.inner.claim('new:evt_1', 'later', 1_000)).toBe('claimed');
  });

  test('a second key found handled: the first is recorded as handled too, for as long as remembered', async () => {
    const { recording, scoped } = rotation();
    await recording.inner.claim('old:evt_1', 'other', 1_000);
    await recording.inner.complete('old:evt_1', 'other', 60_000);
    expect(await scoped.claim([...KEYS], 'tok', 1_000, 5_000)).toBe('completed');
    expect(recording.calls).toEqual([
      'claim new:evt_1 tok 1000',
      'claim old:evt_1 tok 1000',
      'complete new:evt_1 tok 5000',
    ]);
    expect(await recording.inner.claim('new:evt_1', 'later', 1_000)).toBe('completed');
  });

  test('the answer stands when giving back the held keys fails', async () => {
    const { recording, scoped } = rotation();
    await recording.inner.claim('old:evt_1', 'other', 1_000);
    recording.script['release new:evt_1'] = () => Promise.reject(new Error('release refused'));
    expect(await scoped.claim([...KEYS], 'tok', 1_000, 5_000)).toBe('in_progress');
  });

  test('a claim that fails on the second key releases the first, and fails', async () => {
    const { recording, scoped } = rotation();
    recording.script['claim old:evt_1'] = () => Promise.reject(new Error('claim refused'));
    await expect(scoped.claim([...KEYS], 'tok', 1_000, 5_000)).rejects.toThrow('claim refused');
    await flush();
    expect(recording.calls).toEqual([
      'claim new:evt_1 tok 1000',
      'claim old:evt_1 tok 1000',
      'release new:evt_1 tok',
    ]);
    expect(await recording.inner.claim('new:evt_1', 'later', 1_000)).toBe('claimed');
  });

  test('a claim that fails on the first key releases nothing', async () => {
    const { recording, scoped } = rotation();
    recording.script['claim new:evt_1'] = () => Promise.reject(new Error('claim refused'));
    await expect(scoped.claim([...KEYS], 'tok', 1_000, 5_000)).rejects.toThrow('claim refused');
    await flush();
    expect(recording.calls).toEqual(['claim new:evt_1 tok 1000']);
  });

  test('are completed together: completed only when every key was', async () => {
    const { recording, scoped } = rotation();
    await scoped.claim([...KEYS], 'tok', 1_000, 5_000);
    expect(await scoped.complete([...KEYS], 'tok', 5_000)).toBe('completed');
    expect(recording.calls.slice(2)).toEqual(['complete new:evt_1 tok 5000', 'complete old:evt_1 tok 5000']);

    const lost = rotation();
    await lost.scoped.claim([...KEYS], 'tok', 1_000, 5_000);
    lost.recording.script['complete old:evt_1'] = () => Promise.resolve('lost');
    expect(await lost.scoped.complete([...KEYS], 'tok', 5_000)).toBe('lost');
    const firstLost = rotation();
    firstLost.recording.script['complete new:evt_1'] = () => Promise.resolve('lost');
    expect(await firstLost.scoped.complete([...KEYS], 'tok', 5_000)).not.toBe('completed');
  });

  test('are released together', async () => {
    const { recording, scoped } = rotation();
    await scoped.claim([...KEYS], 'tok', 1_000, 5_000);
    expect(await scoped.release([...KEYS], 'tok')).toBeUndefined();
    expect(recording.calls.slice(2)).toEqual(['release new:evt_1 tok', 'release old:evt_1 tok']);
    expect(await recording.inner.claim('old:evt_1', 'later', 1_000)).toBe('claimed');
  });

  test('are renewed together: lost when any key is', async () => {
    const { recording, scoped } = rotation();
    await scoped.claim([...KEYS], 'tok', 1_000, 5_000);
    expect(await scoped.renew([...KEYS], 'tok', 2_000)).toBe('renewed');
    expect(recording.calls.slice(2)).toEqual(['renew new:evt_1 tok 2000', 'renew old:evt_1 tok 2000']);
    recording.script['renew old:evt_1'] = () => Promise.resolve('lost');
    expect(await scoped.renew([...KEYS], 'tok', 2_000)).toBe('lost');
  });
});
