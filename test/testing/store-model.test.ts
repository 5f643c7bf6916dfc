/**
 * The store model (src/testing/store-model.ts): the rules as a table of steps, and as a sequential store
 * checked against MemoryStore on a fake clock with fast-check's model-based commands, so that the oracle
 * the store checker trusts is itself held to the store every other store is compared with.
 */
import fc from 'fast-check';
import { MemoryStore } from 'service-webhooks';
import { ABSENT, modelSteps, SequentialStoreModel, type StoreCall } from 'service-webhooks/testing';
import { describe, expect, test } from 'vitest';

const claim = (token: string, ms = 100): StoreCall => ({ method: 'claim', token, ms });
const complete = (token: string, ms = 1_000): StoreCall => ({ method: 'complete', token, ms });
const renew = (token: string, ms = 100): StoreCall => ({ method: 'renew', token, ms });
const release = (token: string): StoreCall => ({ method: 'release', token });

describe('modelSteps: the rules, one call from one record', () => {
  const held = { state: 'in_progress', token: 'a', ms: 100 } as const;
  const done = { state: 'completed', ms: 1_000 } as const;
  const answers = (record: Parameters<typeof modelSteps>[0], call: StoreCall) =>
    modelSteps(record, call).map(({ live, answer }) => ({ live, answer }));

  test('rule 1: a claim takes an absent key; a live record answers what it is, an ended one is taken', () => {
    expect(answers(ABSENT, claim('b'))).toEqual([{ live: undefined, answer: 'claimed' }]);
    expect(answers(held, claim('b'))).toEqual([
      { live: true, answer: 'in_progress' },
      { live: false, answer: 'claimed' },
    ]);
    expect(answers(done, claim('b'))).toEqual([
      { live: true, answer: 'completed' },
      { live: false, answer: 'claimed' },
    ]);
    // Even the holder's own token finds its live lease in progress: a claim never re-enters.
    expect(answers(held, claim('a'))[0]).toEqual({ live: true, answer: 'in_progress' });
  });

  test('rule 2: the holder completes whether or not its lease ended; others only where nothing is live', () => {
    expect(answers(held, complete('a'))).toEqual([{ live: undefined, answer: 'completed' }]);
    expect(answers(ABSENT, complete('b'))).toEqual([{ live: undefined, answer: 'completed' }]);
    expect(answers(held, complete('b'))).toEqual([
      { live: true, answer: 'lost' },
      { live: false, answer: 'completed' },
    ]);
    // A completion holds no token: completing twice is lost while it lives.
    expect(answers(done, complete('a'))).toEqual([
      { live: true, answer: 'lost' },
      { live: false, answer: 'completed' },
    ]);
  });

  test('rule 3: release deletes only the caller’s in-progress record, never a completion', () => {
    expect(modelSteps(held, release('a'))).toEqual([
      { live: undefined, answer: undefined, next: ABSENT, wrote: false },
    ]);
    expect(modelSteps(held, release('b'))[0]?.next).toBe(held);
    expect(modelSteps(done, release('a'))[0]?.next).toBe(done);
  });

  test('rule 4: renew on the terms of complete, leaving the key held by the token for a new lease', () => {
    expect(modelSteps(held, renew('a', 500))).toEqual([
      {
        live: undefined,
        answer: 'renewed',
        next: { state: 'in_progress', token: 'a', ms: 500 },
        wrote: true,
      },
    ]);
    expect(answers(held, renew('b'))).toEqual([
      { live: true, answer: 'lost' },
      { live: false, answer: 'renewed' },
    ]);
    expect(answers(done, renew('a'))[0]).toEqual({ live: true, answer: 'lost' });
  });
});

describe('SequentialStoreModel', () => {
  test('counts leases (exclusive) and TTLs (inclusive) from the call that wrote them', () => {
    const model = new SequentialStoreModel();
    expect(model.apply('k', claim('a', 100), 0)).toBe('claimed');
    expect(model.apply('k', claim('b', 100), 99)).toBe('in_progress');
    expect(model.apply('k', renew('a', 100), 99)).toBe('renewed');
    expect(model.apply('k', claim('b', 100), 198)).toBe('in_progress');
    expect(model.apply('k', claim('b', 100), 199)).toBe('claimed');
    expect(model.apply('k', complete('a', 50), 200)).toBe('lost');
    expect(model.apply('k', complete('b', 50), 200)).toBe('completed');
    expect(model.apply('k', claim('c', 100), 250)).toBe('completed');
    expect(model.apply('k', claim('c', 100), 251)).toBe('claimed');
    expect(model.apply('other', complete('z'), 251)).toBe('completed');
  });

  test('agrees with MemoryStore on a fake clock, call for call (fast-check model-based commands)', async () => {
    type Real = { store: MemoryStore; advance: (ms: number) => void };
    type Model = { model: SequentialStoreModel; now: () => number };
    const keys = ['evt_1', 'evt_2'];
    const tokens = ['a', 'b', 'c'];
    class Call implements fc.AsyncCommand<Model, Real> {
      constructor(
        readonly key: string,
        readonly call: StoreCall,
      ) {}
      check = () => true;
      async run(model: Model, real: Real) {
        const { store } = real;
        const { call, key } = this;
        const answer =
          call.method === 'claim'
            ? await store.claim(key, call.token, call.ms)
            : call.method === 'complete'
              ? await store.complete(key, call.token, call.ms)
              : call.method === 'renew'
                ? await store.renew(key, call.token, call.ms)
                : await store.release(key, call.token);
        expect(answer).toBe(model.model.apply(key, call, model.now()));
      }
      toString = () =>
        `${this.call.method}(${this.key}, ${this.call.token}${'ms' in this.call ? `, ${this.call.ms}` : ''})`;
    }
    class Advance implements fc.AsyncCommand<Model, Real> {
      constructor(readonly ms: number) {}
      check = () => true;
      async run(_model: Model, real: Real) {
        real.advance(this.ms);
      }
      toString = () => `advance(${this.ms})`;
    }
    const key = fc.constantFrom(...keys);
    const token = fc.constantFrom(...tokens);
    const ms = fc.constantFrom(1, 50, 100);
    const commands = [
      fc.tuple(key, token, ms).map(([k, t, m]) => new Call(k, { method: 'claim', token: t, ms: m })),
      fc.tuple(key, token, ms).map(([k, t, m]) => new Call(k, { method: 'complete', token: t, ms: m })),
      fc.tuple(key, token, ms).map(([k, t, m]) => new Call(k, { method: 'renew', token: t, ms: m })),
      fc.tuple(key, token).map(([k, t]) => new Call(k, { method: 'release', token: t })),
      fc.constantFrom(0, 1, 49, 50, 51, 99, 100, 101).map((m) => new Advance(m)),
    ];
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 60 }), async (program) => {
        let now = 1_000;
        const real: Real = { store: new MemoryStore({ now: () => now }), advance: (m) => (now += m) };
        await fc.asyncModelRun(
          () => ({ model: { model: new SequentialStoreModel(), now: () => now }, real }),
          program,
        );
      }),
      { numRuns: 300 },
    );
  });
});
