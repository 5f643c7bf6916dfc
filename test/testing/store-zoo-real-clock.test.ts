/**
 * The zoo (./store-zoo.ts) on its own clock (performance.now()), as a store on a database's clock runs:
 * histories wait for real, so leases and TTLs end at real instants and the checker reads them through
 * each call's measured interval, with its default 2 ms clock tolerance. Every broken store is still
 * caught with the default settings (but a shorter shrinking budget: finding is what is measured here,
 * and this file must stay short), and the unbroken one passes; the checks of each test run at once,
 * which also loads the machine as a busy CI does (slower calls widen intervals, and must never raise a
 * false alarm). The seed is new on every run (a failure prints it); STORE_CHECK_SEED pins it.
 */
import { checkStore, type StoreCheckReport } from 'service-webhooks/testing';
import { expect, test } from 'vitest';
import { storeCheckSeed } from '../support/store-check.js';
import { HASHED_KEYS, SUBTLE_FLAWS, ZOO_FLAWS, type ZooFlaw, ZooStore } from './store-zoo.js';

const seed = storeCheckSeed();

/** Stores keyed by a 32-bit hash, and the bugs that need one interleaving or a stale token (issue 45). */
const LATER_FLAWS: readonly ZooFlaw[] = [...(Object.keys(HASHED_KEYS) as ZooFlaw[]), ...SUBTLE_FLAWS];

/** checkStore's default number of histories: a broken store must be caught within it. */
const DEFAULT_HISTORIES = 1_000;

/**
 * Each broken store was caught within the default number of histories. Judged in histories, not in
 * time: a minute's bound read 67 s once on CI's loaded machine, and speed is the bench's to measure,
 * never a test's verdict. How long each took is printed.
 */
function expectCaught(flaws: readonly ZooFlaw[], reports: readonly StoreCheckReport[]) {
  for (const [index, report] of reports.entries()) {
    const flaw = flaws[index];
    if (report.ok)
      throw new Error(`${flaw}: not caught in ${report.histories} histories (seed ${report.seed})`);
    expect(report.histories, `${flaw}, seed ${report.seed}`).toBeLessThanOrEqual(DEFAULT_HISTORIES);
    console.info(
      `${flaw}: caught after ${report.histories} histories, ${Math.round(report.foundAfterMs / 1000)} s (seed ${report.seed})`,
    );
  }
}

test('on the real clock, checkStore catches every broken store within its default histories and passes the unbroken one', async () => {
  const flaws = ZOO_FLAWS.filter((flaw) => !LATER_FLAWS.includes(flaw));
  const [unbroken, ...broken] = await Promise.all([
    checkStore({ createStore: ({ fault }) => new ZooStore({ fault }), histories: 150, seed }),
    ...flaws.map((flaw) =>
      checkStore({ createStore: ({ fault }) => new ZooStore({ flaw, fault }), seed, shrinkTimeMs: 3_000 }),
    ),
  ]);
  expect(unbroken, unbroken!.ok ? '' : `${unbroken!.violation}\n${unbroken!.history}`).toMatchObject({
    ok: true,
    histories: 150,
  });
  expectCaught(flaws, broken);
}, 300_000);

// Two groups rather than seven checks at once: seven at once on two cores left each a seventh of the
// machine. The same CPU in all; each group's checks still share the machine as the first test's do.
// The timeouts are a hang's, far past the minute 1,000 real-clock histories take on an idle machine.
test.each([
  ['the stores keyed by a 32-bit hash', Object.keys(HASHED_KEYS) as ZooFlaw[]],
  ['the three subtle bugs', [...SUBTLE_FLAWS]],
])(
  'on the real clock, %s are caught within the default histories',
  async (_name, flaws) => {
    const reports = await Promise.all(
      flaws.map((flaw) =>
        checkStore({ createStore: ({ fault }) => new ZooStore({ flaw, fault }), seed, shrinkTimeMs: 3_000 }),
      ),
    );
    expectCaught(flaws, reports);
  },
  300_000,
);
