/**
 * The zoo (./store-zoo.ts) on its own clock (performance.now()), as a store on a database's clock runs:
 * histories wait for real, so leases and TTLs end at real instants and the checker reads them through
 * each call's measured interval, with its default 2 ms clock tolerance. Every broken store is still
 * caught with the default settings (but a shorter shrinking budget: finding is what is measured here,
 * and this file must stay short), and the unbroken one passes; all eight checks run at once, which also
 * loads the machine as a busy CI does (slower calls widen intervals, and must never raise a false
 * alarm). The seed is new on every run (a failure prints it); STORE_CHECK_SEED pins it.
 */
import { checkStore } from 'service-webhooks/testing';
import { expect, test } from 'vitest';
import { storeCheckSeed } from '../support/store-check.js';
import { ZOO_FLAWS, ZooStore } from './store-zoo.js';

const seed = storeCheckSeed();

test('on the real clock, checkStore catches every broken store within a minute and passes the unbroken one', async () => {
  const [unbroken, ...broken] = await Promise.all([
    checkStore({ createStore: ({ fault }) => new ZooStore({ fault }), histories: 150, seed }),
    ...ZOO_FLAWS.map((flaw) =>
      checkStore({ createStore: ({ fault }) => new ZooStore({ flaw, fault }), seed, shrinkTimeMs: 3_000 }),
    ),
  ]);
  expect(unbroken, unbroken!.ok ? '' : `${unbroken!.violation}\n${unbroken!.history}`).toMatchObject({
    ok: true,
    histories: 150,
  });
  for (const [index, report] of broken.entries()) {
    const flaw = ZOO_FLAWS[index];
    if (report.ok)
      throw new Error(`${flaw}: not caught in ${report.histories} histories (seed ${report.seed})`);
    expect(report.foundAfterMs, `${flaw}, seed ${report.seed}`).toBeLessThan(60_000);
  }
}, 90_000);
