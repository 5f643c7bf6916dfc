/**
 * The four resource operations of the `ordering` option (claimResource, renewResource,
 * releaseResource, completeOrdered), checked directly against a store on its real server: each
 * store's own ordering test file runs these beside what only it can check (its rows or items, its
 * migration). The shared conformance suite and checkStore cover the same contract from the
 * testing library; these tests pin the built-in stores' answers in the cases the contract names, with
 * races of many concurrent calls on one resource.
 */
import type { IdempotencyStore } from 'service-webhooks';
import type { describe as Describe, expect as Expect, test as Test } from 'vitest';
import { sleep } from '../support/sleep.js';

type OrderedStore = Required<
  Pick<IdempotencyStore, 'claim' | 'claimResource' | 'renewResource' | 'releaseResource' | 'completeOrdered'>
>;

export interface ResourceOperationsOptions {
  name: string;
  createStore: () => OrderedStore;
  describe: typeof Describe;
  test: typeof Test;
  expect: typeof Expect;
  /**
   * A lease short enough to wait out in a test, long enough that a loaded machine's calls finish
   * within it (each test waits `shortLeaseMs` plus a margin, never asserts a duration).
   */
  shortLeaseMs?: number;
  /** How many claims race for one resource. */
  racers?: number;
}

const LONG = 60_000;
const DAY = 86_400_000;

export function resourceOperationsTests(options: ResourceOperationsOptions): void {
  const { describe, test, expect, createStore } = options;
  const shortLease = options.shortLeaseMs ?? 400;
  const racers = options.racers ?? 20;
  const id = (label: string) => `${label}-${crypto.randomUUID()}`;
  const token = () => crypto.randomUUID();
  /** An event key of the resource, as the core makes it: the resource, U+001F, the rest. */
  const eventKey = (resource: string, event: string) => `${resource}\u001f${event}`;

  /** Complete `event` and advance the watermark to `version` with `holder`'s token, as a guarded delivery ends. */
  const completeAs = (
    store: OrderedStore,
    resource: string,
    event: string,
    holder: string,
    version: number,
  ) => store.completeOrdered(eventKey(resource, event), holder, DAY, resource, version, DAY);

  /** A stranger's claim finds the resource free, its watermark `watermark`. */
  async function expectFreeAt(store: OrderedStore, resource: string, watermark: number | undefined) {
    expect(await store.claimResource(resource, token(), LONG)).toEqual({ outcome: 'claimed', watermark });
  }

  /** Claim the event and its resource with one token, as a guarded delivery does. */
  async function holdBoth(store: OrderedStore, resource: string, event: string, lease = LONG) {
    const held = token();
    expect(await store.claim(eventKey(resource, event), held, lease)).toBe('claimed');
    expect((await store.claimResource(resource, held, lease)).outcome).toBe('claimed');
    return held;
  }

  describe(`${options.name}: resource operations`, () => {
    test('a first claim takes the resource with no watermark; a second is busy for what is left of the lease', async () => {
      const store = createStore();
      const resource = id('user:usr');
      await expectFreeAt(store, resource, undefined);
      const second = await store.claimResource(resource, token(), LONG);
      expect(second.outcome).toBe('busy');
      if (second.outcome !== 'busy') return;
      expect(second.retryAfterMs).toBeGreaterThanOrEqual(1);
      expect(second.retryAfterMs).toBeLessThanOrEqual(LONG);
      // Most of the minute is left: the answer is the holder's lease, not a constant.
      expect(second.retryAfterMs).toBeGreaterThan(LONG / 2);
    });

    test(`of ${racers} concurrent claims of one resource exactly one is claimed, the rest busy`, async () => {
      const store = createStore();
      const resource = id('user:race');
      const answers = await Promise.all(
        Array.from({ length: racers }, () => store.claimResource(resource, token(), LONG)),
      );
      expect(answers.filter((answer) => answer.outcome === 'claimed')).toHaveLength(1);
      expect(answers.filter((answer) => answer.outcome === 'busy')).toHaveLength(racers - 1);
    });

    test('a lease that ended is taken over, once, by concurrent claims', async () => {
      const store = createStore();
      const resource = id('user:takeover');
      expect((await store.claimResource(resource, token(), shortLease)).outcome).toBe('claimed');
      await sleep(shortLease + 100);
      const answers = await Promise.all(
        Array.from({ length: racers }, () => store.claimResource(resource, token(), LONG)),
      );
      expect(answers.filter((answer) => answer.outcome === 'claimed')).toHaveLength(1);
    });

    test('renewResource: the holder renews; another token is lost while the lease lives and renews once it ended', async () => {
      const store = createStore();
      const resource = id('user:renew');
      const holder = token();
      expect((await store.claimResource(resource, holder, shortLease)).outcome).toBe('claimed');
      expect(await store.renewResource(resource, token(), LONG)).toBe('lost');
      expect(await store.renewResource(resource, holder, LONG)).toBe('renewed');
      // Renewed to a minute: the short lease's end passes and the resource is still busy.
      await sleep(shortLease + 100);
      expect((await store.claimResource(resource, token(), LONG)).outcome).toBe('busy');

      const lapsed = id('user:lapsed');
      const first = token();
      expect((await store.claimResource(lapsed, first, shortLease)).outcome).toBe('claimed');
      await sleep(shortLease + 100);
      // The holder's lease ended and nobody took it: the holder renews it, so another is lost after.
      expect(await store.renewResource(lapsed, first, LONG)).toBe('renewed');
      expect(await store.renewResource(lapsed, token(), LONG)).toBe('lost');
      const late = id('user:late');
      expect((await store.claimResource(late, token(), shortLease)).outcome).toBe('claimed');
      await sleep(shortLease + 100);
      const stranger = token();
      expect(await store.renewResource(late, stranger, LONG)).toBe('renewed');
      expect((await store.claimResource(late, token(), LONG)).outcome).toBe('busy');
      // A holder whose lease another took over is lost, and the new holder keeps it.
      const taken = id('user:taken');
      const old = token();
      expect((await store.claimResource(taken, old, shortLease)).outcome).toBe('claimed');
      await sleep(shortLease + 100);
      expect((await store.claimResource(taken, token(), LONG)).outcome).toBe('claimed');
      expect(await store.renewResource(taken, old, LONG)).toBe('lost');
    });

    test('releaseResource frees the resource only for its holder, and keeps the watermark', async () => {
      const store = createStore();
      const resource = id('user:release');
      const holder = await holdBoth(store, resource, 'evt_1');
      await store.releaseResource(resource, token());
      expect((await store.claimResource(resource, token(), LONG)).outcome).toBe('busy');
      expect(await completeAs(store, resource, 'evt_1', holder, 10)).toBe('completed');
      const next = token();
      expect(await store.claimResource(resource, next, LONG)).toEqual({ outcome: 'claimed', watermark: 10 });
      await store.releaseResource(resource, next);
      await expectFreeAt(store, resource, 10);
    });

    test('completeOrdered completes the event, advances the watermark and ends the lease, in one step', async () => {
      const store = createStore();
      const resource = id('user:complete');
      const key = eventKey(resource, 'evt_1');
      const holder = await holdBoth(store, resource, 'evt_1');
      expect(await store.completeOrdered(key, holder, DAY, resource, 3_400_000_001, DAY)).toBe('completed');
      expect(await store.claim(key, token(), LONG)).toBe('completed');
      // A second completion with the same token finds no holder, as complete() does.
      expect(await store.completeOrdered(key, holder, DAY, resource, 3_400_000_005, DAY)).toBe('lost');
      await expectFreeAt(store, resource, 3_400_000_001);
    });

    test('the watermark never moves back, and holds the largest safe integer exactly', async () => {
      const store = createStore();
      const resource = id('user:max');
      const newer = await holdBoth(store, resource, 'evt_new');
      expect(await completeAs(store, resource, 'evt_new', newer, 500)).toBe('completed');
      const older = await holdBoth(store, resource, 'evt_old');
      expect(await completeAs(store, resource, 'evt_old', older, 400)).toBe('completed');
      const deleted = await holdBoth(store, resource, 'evt_del');
      expect(await completeAs(store, resource, 'evt_del', deleted, Number.MAX_SAFE_INTEGER)).toBe(
        'completed',
      );
      const after = await holdBoth(store, resource, 'evt_after');
      expect(await completeAs(store, resource, 'evt_after', after, 600)).toBe('completed');
      await expectFreeAt(store, resource, Number.MAX_SAFE_INTEGER);
    });

    test("a 'lost' completion changes nothing: the event stays held, the watermark and the lease stay", async () => {
      const store = createStore();
      const resource = id('user:lost');
      const done = await holdBoth(store, resource, 'evt_1');
      expect(await completeAs(store, resource, 'evt_1', done, 7)).toBe('completed');
      const holder = await holdBoth(store, resource, 'evt_2');
      const stranger = token();
      expect(await completeAs(store, resource, 'evt_2', stranger, 99)).toBe('lost');
      // The holder's lease is still live, the event still in progress, the watermark still 7.
      expect((await store.claimResource(resource, token(), LONG)).outcome).toBe('busy');
      expect(await store.claim(eventKey(resource, 'evt_2'), token(), LONG)).toBe('in_progress');
      expect(await completeAs(store, resource, 'evt_2', holder, 8)).toBe('completed');
      await expectFreeAt(store, resource, 8);
    });

    test('a completion by a token that does not hold the resource leaves the holder its lease', async () => {
      const store = createStore();
      const resource = id('user:other');
      const eventOwner = token();
      const key = eventKey(resource, 'evt_1');
      expect(await store.claim(key, eventOwner, LONG)).toBe('claimed');
      const resourceOwner = token();
      expect((await store.claimResource(resource, resourceOwner, LONG)).outcome).toBe('claimed');
      expect(await store.completeOrdered(key, eventOwner, DAY, resource, 42, DAY)).toBe('completed');
      expect((await store.claimResource(resource, token(), LONG)).outcome).toBe('busy');
      expect(await store.renewResource(resource, resourceOwner, LONG)).toBe('renewed');
      await store.releaseResource(resource, resourceOwner);
      await expectFreeAt(store, resource, 42);
    });

    test('completeOrdered on the terms of complete(): an ended lease nobody took completes; a taken one is lost', async () => {
      const store = createStore();
      const resource = id('user:ended');
      const key = eventKey(resource, 'evt_1');
      const slow = token();
      expect(await store.claim(key, slow, shortLease)).toBe('claimed');
      expect((await store.claimResource(resource, slow, shortLease)).outcome).toBe('claimed');
      await sleep(shortLease + 100);
      expect(await store.completeOrdered(key, slow, DAY, resource, 5, DAY)).toBe('completed');
      await expectFreeAt(store, resource, 5);

      const other = id('user:overtaken');
      const otherKey = eventKey(other, 'evt_1');
      const late = token();
      expect(await store.claim(otherKey, late, shortLease)).toBe('claimed');
      expect((await store.claimResource(other, late, shortLease)).outcome).toBe('claimed');
      await sleep(shortLease + 100);
      const retry = token();
      expect(await store.claim(otherKey, retry, LONG)).toBe('claimed');
      expect((await store.claimResource(other, retry, LONG)).outcome).toBe('claimed');
      expect(await store.completeOrdered(otherKey, late, DAY, other, 50, DAY)).toBe('lost');
      expect(await store.completeOrdered(otherKey, retry, DAY, other, 6, DAY)).toBe('completed');
      expect(await store.claimResource(other, token(), LONG)).toEqual({ outcome: 'claimed', watermark: 6 });
    });

    test('a watermark is forgotten once its TTL ended, and an advance never shortens it', async () => {
      const store = createStore();
      const resource = id('user:ttl');
      // Long enough for the next call to read it on a loaded machine.
      const brief = 2_000;
      const first = await holdBoth(store, resource, 'evt_1');
      expect(await store.completeOrdered(eventKey(resource, 'evt_1'), first, DAY, resource, 10, brief)).toBe(
        'completed',
      );
      expect(await store.claimResource(resource, first, LONG)).toEqual({ outcome: 'claimed', watermark: 10 });
      await store.releaseResource(resource, first);
      // A store may round a memory's end up to a whole second (DynamoDB's TTL is in seconds).
      await sleep(brief + 1_100);
      // Forgotten: a lower position is then the watermark, not max(10, 3).
      const second = token();
      expect(await store.claimResource(resource, second, LONG)).toEqual({
        outcome: 'claimed',
        watermark: undefined,
      });
      expect(await store.claim(eventKey(resource, 'evt_2'), second, LONG)).toBe('claimed');
      expect(await store.completeOrdered(eventKey(resource, 'evt_2'), second, DAY, resource, 3, LONG)).toBe(
        'completed',
      );
      // A minute's memory, then an advance asking for less: the minute stays.
      const third = await holdBoth(store, resource, 'evt_3');
      expect(
        await store.completeOrdered(eventKey(resource, 'evt_3'), third, DAY, resource, 4, shortLease),
      ).toBe('completed');
      await sleep(shortLease + 100);
      await expectFreeAt(store, resource, 4);
    });

    test("concurrent completions of one resource's events leave the highest position, and each completes once", async () => {
      const store = createStore();
      const resource = id('user:many');
      const positions = Array.from({ length: racers }, (_, index) => 1_000 + ((index * 7) % racers));
      const owners = await Promise.all(
        positions.map(async (_, index) => {
          const owner = token();
          expect(await store.claim(eventKey(resource, `evt_${index}`), owner, LONG)).toBe('claimed');
          return owner;
        }),
      );
      const answers = await Promise.all(
        positions.map((position, index) =>
          Promise.all([
            store.completeOrdered(
              eventKey(resource, `evt_${index}`),
              owners[index]!,
              DAY,
              resource,
              position,
              DAY,
            ),
            store.completeOrdered(
              eventKey(resource, `evt_${index}`),
              owners[index]!,
              DAY,
              resource,
              position,
              DAY,
            ),
          ]),
        ),
      );
      for (const pair of answers) expect(pair.toSorted()).toEqual(['completed', 'lost']);
      await expectFreeAt(store, resource, Math.max(...positions));
    });

    test('claims racing a completion see the watermark before or after it, never a lease lost in between', async () => {
      const store = createStore();
      const resource = id('user:handover');
      const holder = await holdBoth(store, resource, 'evt_1');
      const claims = Array.from({ length: racers }, () => token());
      const [completed, ...answers] = await Promise.all([
        completeAs(store, resource, 'evt_1', holder, 77),
        ...claims.map((each) => store.claimResource(resource, each, LONG)),
      ]);
      expect(completed).toBe('completed');
      const won = answers.filter((answer) => answer.outcome === 'claimed');
      // At most one took the resource once the holder's lease ended, and it saw the new watermark.
      expect(won.length).toBeLessThanOrEqual(1);
      for (const answer of won) expect(answer).toEqual({ outcome: 'claimed', watermark: 77 });
      if (won.length === 0) {
        await expectFreeAt(store, resource, 77);
      } else {
        expect((await store.claimResource(resource, token(), LONG)).outcome).toBe('busy');
      }
    });

    test('resources and event keys are apart: one string may name both', async () => {
      const store = createStore();
      const name = id('user:both');
      expect(await store.claim(name, token(), LONG)).toBe('claimed');
      expect((await store.claimResource(name, token(), LONG)).outcome).toBe('claimed');
      expect(await store.claim(name, token(), LONG)).toBe('in_progress');
    });
  });
}
