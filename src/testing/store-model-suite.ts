import { type CheckStoreOptions, checkStore, type StoreCheckReport, StoreModelError } from './check-store.js';

/**
 * How {@link storeModelSuite} runs: {@link checkStore}'s options, a name, and the test runner's functions
 * (vitest, jest, mocha and `node:test` all fit).
 *
 * @example
 * ```ts
 * const options: StoreModelSuiteOptions = { name: 'MyStore', createStore: () => new MyStore(), describe, test, histories: 300 };
 * ```
 */
export interface StoreModelSuiteOptions extends CheckStoreOptions {
  /** Name of the describe block, such as `'RedisStore (cluster)'`. */
  name: string;
  /** The runner's `describe`. */
  describe: (name: string, body: () => void) => unknown;
  /** The runner's `test` (or `it`); the third argument is a timeout in ms. */
  test: (name: string, body: () => Promise<void>, timeoutMs?: number) => unknown;
  /**
   * The test's timeout.
   * @default timeLimitMs + shrinkTimeMs + 30 s, or 10 minutes without a time limit
   */
  timeoutMs?: number | undefined;
}

/**
 * Register {@link checkStore} in any test runner: one describe block with one test, which fails with the
 * rule broken, the shrunk history, and the seed and path that replay it. Leave `seed` out in CI, so each
 * run checks new histories; a failure prints the seed to pin while you fix it.
 *
 * @example
 * ```ts
 * import { describe, test } from 'vitest';
 * import { storeModelSuite } from 'service-webhooks/testing';
 * import { MyStore } from './my-store.js';
 *
 * storeModelSuite({ name: 'MyStore', createStore: () => new MyStore(db), describe, test, histories: 300 });
 * ```
 */
export function storeModelSuite(options: StoreModelSuiteOptions): void {
  const { name, describe, test, timeoutMs, ...check } = options;
  const histories = check.histories ?? 1_000;
  const timeout =
    timeoutMs ??
    (check.timeLimitMs === undefined ? 600_000 : check.timeLimitMs + (check.shrinkTimeMs ?? 20_000) + 30_000);
  describe(`${name} is linearizable against the IdempotencyStore model`, () => {
    test(
      `${histories} generated histories of ${check.concurrency ?? 8} concurrent clients`,
      async () => {
        const report = await checkStore(check);
        if (!report.ok) throw new StoreModelError(failureMessage(name, report));
      },
      timeout,
    );
  });
}

function failureMessage(name: string, report: Extract<StoreCheckReport, { ok: false }>): string {
  return [
    `${name} broke ${report.violation}`,
    '',
    report.history,
    '',
    `Found after ${report.histories} histories (${Math.round(report.foundAfterMs)} ms), shrunk ${report.shrinks} times.`,
    `Replay: checkStore({ ...sameOptions, seed: ${report.seed}, path: ${JSON.stringify(report.path)} })`,
  ].join('\n');
}
