// @ts-check
/**
 * Mutation testing of the framework-agnostic core (issue 30): `npm run test:mutation`. Not part of
 * .ci/run: a full run takes about 20 minutes on the 2-core machine (815 mutants, two test runners).
 * StrykerJS is not a root devDependency: the script installs it on demand (test/support/mutation.ts).
 * Narrow a run while you work:
 * `npm run test:mutation -- --mutate src/guarded-run.ts`. Surviving mutants that are equivalent (or change only
 * performance) are listed, one line each, in stryker.survivors.md.
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  testRunner: 'vitest',
  // The unit tier only (vitest.config.ts's `unit` project, without its type tests).
  vitest: { configFile: 'test/core/vitest.mutation.config.ts', related: false },
  plugins: ['@stryker-mutator/vitest-runner'],
  coverageAnalysis: 'perTest',
  // The core: the exactly-once engine, the parser and verifier, the handlers and the memory store. Not
  // the stores with a service (integration tier), the CLI, the sandbox, the sender, the adapters.
  mutate: [
    'src/guarded-run.ts',
    'src/scoped-store.ts',
    'src/envelope.ts',
    'src/signature.ts',
    'src/delivery-verifier.ts',
    'src/memory-store.ts',
    'src/run-handlers.ts',
  ],
  // vitest runs TypeScript through esbuild: a mutant that does not type-check still runs.
  checkers: [],
  ignorePatterns: ['dist', 'coverage', '.next', 'bench/.tmp', 'reports', 'examples/next/.next'],
  concurrency: 2,
  timeoutMS: 10_000,
  incremental: true,
  incrementalFile: 'reports/mutation/stryker-incremental.json',
  reporters: ['clear-text', 'progress', 'html'],
  htmlReporter: { fileName: 'reports/mutation/index.html' },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
  thresholds: { high: 90, low: 80, break: 75 },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
