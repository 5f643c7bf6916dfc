import type { IdempotencyStore } from 'service-webhooks/core';
import type { StoreCheckContext } from './store-check-context.js';

/**
 * One call of the ordering operations (and the event claims they go with) in a history the ordering
 * check ran, with its interval in real time and what it answered.
 */
interface OrderingCall {
  readonly client: number;
  readonly method: 'claim' | 'claimResource' | 'renewResource' | 'releaseResource' | 'completeOrdered';
  readonly resource: string;
  readonly key: string;
  readonly token: string;
  readonly position: number;
  readonly invoked: number;
  responded: number;
  /** A word, `busy`, `claimed:<watermark>`, or `undefined` for a release. */
  answer: string | undefined;
}

/** The model of one history: resources (holder, watermark) and event keys (held, completed). */
interface ModelState {
  readonly holders: ReadonlyMap<string, string>;
  readonly watermarks: ReadonlyMap<string, number>;
  readonly events: ReadonlyMap<string, string>;
}

/** What the ordering check found: nothing, or the history no order of calls explains. */
export type OrderingVerdict =
  | { readonly ok: true; readonly histories: number; readonly calls: number }
  | {
      readonly ok: false;
      readonly histories: number;
      readonly calls: number;
      readonly violation: string;
      readonly history: string;
    };

export interface OrderingCheckOptions {
  readonly createStore: (context: StoreCheckContext) => IdempotencyStore | Promise<IdempotencyStore>;
  readonly teardown?: ((store: IdempotencyStore) => void | Promise<void>) | undefined;
  readonly histories: number;
  readonly seed: number;
  readonly run: string;
  readonly virtual: boolean;
  /** Short lease and TTL of the expiry probe (ms): the time unit. */
  readonly unitMs: number;
}

const LONG = 3_600_000;
const COMPLETED = '\u0000completed';

/** mulberry32: a small seeded generator, so that a seed replays the same programs. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * The ordering operations checked as the event operations are, the way a proof would rather than a
 * sample: generated histories (several clients at once, each taking a resource, claiming an event of
 * it, completing it at a random position or giving the resource back, and strangers completing and
 * releasing what they do not hold) run against the store, and some order of the calls consistent
 * with real time must give every answer the model gives (linearizability). Leases and TTLs in these
 * histories outlast them; expiry is checked by a probe of its own: a watermark lives its own TTL,
 * whatever the lease and the event's TTL.
 */
export async function checkOrdering(options: OrderingCheckOptions): Promise<OrderingVerdict> {
  const random = generator(options.seed);
  let calls = 0;
  for (let history = 1; history <= options.histories; history++) {
    const keyPrefix = `${options.run}-ordering-${history}-`;
    let clock = 0;
    const context: StoreCheckContext = {
      now: () => (options.virtual ? clock : performance.now()),
      fault: () => Promise.resolve(),
      keyPrefix,
    };
    const store = await options.createStore(context);
    try {
      if (history === 1) {
        const expired = await expiryProbe(store, keyPrefix, options, (ms) => {
          clock += ms;
        });
        if (expired !== undefined)
          return { ok: false, histories: history, calls, violation: expired, history: '' };
      }
      const recorded = await runOrderingHistory(store, keyPrefix, random);
      calls += recorded.length;
      if (!linearizable(recorded)) {
        return {
          ok: false,
          histories: history,
          calls,
          violation:
            'rule 9 (ordering): no order of the calls, consistent with real time, gives every answer the ordering operations must give',
          history: recorded
            .map(
              (call) =>
                `client ${call.client} [${call.invoked.toFixed(1)}, ${call.responded.toFixed(1)}] ${call.method}(${call.method === 'claimResource' || call.method === 'renewResource' || call.method === 'releaseResource' ? call.resource : call.key}, ${call.token}${call.method === 'completeOrdered' ? `, position ${call.position}` : ''}) → ${call.answer ?? 'done'}`,
            )
            .join('\n'),
        };
      }
    } finally {
      await options.teardown?.(store);
    }
  }
  return { ok: true, histories: options.histories, calls };
}

/** A watermark must be found for its own TTL, past the lease and the event's TTL. */
async function expiryProbe(
  store: IdempotencyStore,
  prefix: string,
  options: OrderingCheckOptions,
  advance: (ms: number) => void,
): Promise<string | undefined> {
  const s = store as Required<IdempotencyStore>;
  const resource = `${prefix}probe`;
  const key = `${resource}\u001fevt`;
  const unit = options.unitMs;
  await s.claimResource(resource, 'probe-a', unit);
  await s.claim(key, 'probe-a', unit);
  await s.completeOrdered(key, 'probe-a', unit, resource, 42, LONG);
  const wait = 3 * unit;
  if (options.virtual) advance(wait);
  else await new Promise((resolve) => setTimeout(resolve, wait));
  const found = await s.claimResource(resource, 'probe-b', LONG);
  if (found.outcome !== 'claimed' || found.watermark !== 42) {
    return `rule 9 (ordering): a watermark completed with watermarkTtlMs ${LONG} was ${found.outcome === 'claimed' ? `found as ${String(found.watermark)}` : 'busy'} ${wait} ms later (the lease and the event's TTL were ${unit} ms): it must live its own TTL`;
  }
  return undefined;
}

/** Two resources, four clients, each a few attempts: enough for every operation to meet every other. */
async function runOrderingHistory(
  store: IdempotencyStore,
  prefix: string,
  random: () => number,
): Promise<OrderingCall[]> {
  const s = store as Required<IdempotencyStore>;
  const resources = [`${prefix}r0`, `${prefix}r1`];
  const recorded: OrderingCall[] = [];
  let sequence = 0;
  const pause = () =>
    new Promise<void>((resolve) =>
      random() < 0.5 ? setImmediate(resolve) : setTimeout(resolve, random() * 2),
    );
  const record = async (
    client: number,
    method: OrderingCall['method'],
    resource: string,
    key: string,
    token: string,
    position: number,
    call: () => Promise<string | undefined>,
  ): Promise<string | undefined> => {
    const entry: OrderingCall = {
      client,
      method,
      resource,
      key,
      token,
      position,
      invoked: performance.now(),
      responded: 0,
      answer: undefined,
    };
    recorded.push(entry);
    entry.answer = await call();
    entry.responded = performance.now();
    return entry.answer;
  };
  const client = async (index: number) => {
    for (let attempt = 0; attempt < 3; attempt++) {
      await pause();
      const resource = resources[Math.floor(random() * resources.length)]!;
      const token = `c${index}-${attempt}`;
      const key = `${resource}\u001fe${++sequence}`;
      const position = Math.floor(random() * 5);
      const taken = await record(index, 'claimResource', resource, key, token, position, async () => {
        const found = await s.claimResource(resource, token, LONG);
        return found.outcome === 'busy' ? 'busy' : `claimed:${String(found.watermark)}`;
      });
      if (taken === 'busy') {
        // A stranger's calls: they must change nothing.
        if (random() < 0.5) {
          await record(index, 'releaseResource', resource, key, token, position, async () => {
            await s.releaseResource(resource, token);
            return undefined;
          });
        } else {
          await record(index, 'completeOrdered', resource, key, token, position, () =>
            s.completeOrdered(key, token, LONG, resource, position, LONG),
          );
        }
        continue;
      }
      await pause();
      if (random() < 0.3) {
        await record(index, 'renewResource', resource, key, token, position, () =>
          s.renewResource(resource, token, LONG),
        );
      }
      await record(index, 'claim', resource, key, token, position, () => s.claim(key, token, LONG));
      await pause();
      if (random() < 0.8) {
        await record(index, 'completeOrdered', resource, key, token, position, () =>
          s.completeOrdered(key, token, LONG, resource, position, LONG),
        );
      } else {
        await record(index, 'releaseResource', resource, key, token, position, async () => {
          await s.releaseResource(resource, token);
          return undefined;
        });
      }
    }
  };
  await Promise.all([0, 1, 2, 3].map(client));
  return recorded;
}

/** The model's answer to `call` from `state`, and the state it leaves. */
function step(state: ModelState, call: OrderingCall): { answer: string | undefined; next: ModelState } {
  const holder = state.holders.get(call.resource);
  const holders = new Map(state.holders);
  switch (call.method) {
    case 'claimResource': {
      if (holder !== undefined && holder !== call.token) return { answer: 'busy', next: state };
      holders.set(call.resource, call.token);
      return {
        answer: `claimed:${String(state.watermarks.get(call.resource))}`,
        next: { ...state, holders },
      };
    }
    case 'renewResource': {
      if (holder !== undefined && holder !== call.token) return { answer: 'lost', next: state };
      holders.set(call.resource, call.token);
      return { answer: 'renewed', next: { ...state, holders } };
    }
    case 'releaseResource': {
      if (holder !== call.token) return { answer: undefined, next: state };
      holders.delete(call.resource);
      return { answer: undefined, next: { ...state, holders } };
    }
    case 'claim': {
      const found = state.events.get(call.key);
      if (found === COMPLETED) return { answer: 'completed', next: state };
      if (found !== undefined) return { answer: 'in_progress', next: state };
      const events = new Map(state.events);
      events.set(call.key, call.token);
      return { answer: 'claimed', next: { ...state, events } };
    }
    case 'completeOrdered': {
      const found = state.events.get(call.key);
      if (found !== undefined && found !== call.token) return { answer: 'lost', next: state };
      const events = new Map(state.events);
      events.set(call.key, COMPLETED);
      const watermarks = new Map(state.watermarks);
      const old = state.watermarks.get(call.resource);
      if (old === undefined || call.position > old) watermarks.set(call.resource, call.position);
      if (holder === call.token) holders.delete(call.resource);
      return { answer: 'completed', next: { holders, watermarks, events } };
    }
  }
}

/**
 * Whether some order of the calls, each placed within its interval (a call that responded before
 * another was invoked comes first), gives every recorded answer: Wing and Gong's search, with the
 * states already tried from each set of placed calls remembered.
 */
function linearizable(calls: readonly OrderingCall[]): boolean {
  const seen = new Set<string>();
  const start: ModelState = { holders: new Map(), watermarks: new Map(), events: new Map() };
  const search = (done: readonly boolean[], state: ModelState, left: number): boolean => {
    if (left === 0) return true;
    const memo = `${done.map((d) => (d ? 1 : 0)).join('')}|${[...state.holders].join()}|${[...state.watermarks].join()}|${[...state.events].join()}`;
    if (seen.has(memo)) return false;
    seen.add(memo);
    let earliestResponse = Number.POSITIVE_INFINITY;
    for (const [index, call] of calls.entries())
      if (!done[index]) earliestResponse = Math.min(earliestResponse, call.responded);
    for (const [index, call] of calls.entries()) {
      if (done[index] || call.invoked > earliestResponse) continue;
      const { answer, next } = step(state, call);
      if (answer !== call.answer) continue;
      const after = [...done];
      after[index] = true;
      if (search(after, next, left - 1)) return true;
    }
    return false;
  };
  return search(
    calls.map(() => false),
    start,
    calls.length,
  );
}
