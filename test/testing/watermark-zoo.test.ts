/**
 * The watermark zoo (watermark-zoo.ts): checkStore with `ordering: true` passes the unbroken store and
 * catches each broken one (an advance not atomic with completion, a comparison on the wrong field, a
 * watermark that expires too early); the conformance suite's ordering tests pass the unbroken one.
 */
import { checkStore, type StoreConformanceOptions, storeConformanceSuite } from 'service-webhooks/testing';
import { describe, expect, test } from 'vitest';
import { WATERMARK_FLAWS, WatermarkZooStore } from './watermark-zoo.js';

const seed = 47;

describe('checkStore with ordering: true over the watermark zoo', () => {
  test('the unbroken store passes (virtual clock)', async () => {
    const report = await checkStore({
      createStore: ({ now }) => new WatermarkZooStore({ now }),
      clock: 'virtual',
      histories: 200,
      ordering: true,
      seed,
    });
    expect(report, report.ok ? '' : `${report.violation}\n${report.history}`).toMatchObject({ ok: true });
  }, 120_000);

  for (const flaw of WATERMARK_FLAWS) {
    test(`${flaw}: caught`, async () => {
      const report = await checkStore({
        createStore: ({ now }) => new WatermarkZooStore({ flaw, now }),
        clock: 'virtual',
        histories: 200,
        ordering: true,
        seed,
      });
      if (report.ok) throw new Error(`not caught in ${report.histories} histories (seed ${report.seed})`);
      expect(report.rule).toBe(9);
      expect(report.violation).toMatch(/ordering/);
    }, 60_000);
  }
});

interface CollectedTest {
  readonly name: string;
  readonly body: () => Promise<void>;
}

function conformanceTests(options: Omit<StoreConformanceOptions, 'describe' | 'test'>): CollectedTest[] {
  const collected: CollectedTest[] = [];
  storeConformanceSuite({
    ...options,
    describe: (_name, body) => body(),
    test: (name, body) => collected.push({ name, body }),
  });
  return collected;
}

describe('storeConformanceSuite with ordering: true over the watermark zoo', () => {
  test('the unbroken store passes every ordering test', async () => {
    const tests = conformanceTests({
      name: 'WatermarkZooStore',
      createStore: () => new WatermarkZooStore(),
      ordering: true,
    });
    const ordering = tests.filter((one) => one.name.startsWith('ordering:'));
    expect(ordering.length).toBeGreaterThanOrEqual(10);
    const failures: string[] = [];
    await Promise.all(
      ordering.map((one) =>
        one.body().catch((error: Error) => failures.push(`${one.name}: ${error.message}`)),
      ),
    );
    expect(failures).toEqual([]);
  }, 60_000);
});
