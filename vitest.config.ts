import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';
import { vitestAliases } from './subpaths.mjs';

/** Tests import the package by name, as users do; the aliases point those names at the sources. */
export const packageAliases = vitestAliases(fileURLToPath(new URL('./', import.meta.url)));

/**
 * The tiers. Every test file is in exactly one: the package tier takes what matches PACKAGE_TESTS, the
 * integration tiers what matches INTEGRATION_TESTS (and not PACKAGE_TESTS; those in SOLO_TESTS are
 * integration-solo's), the checks tier CHECK_TESTS, and the unit tier the rest.
 *
 * - unit (`npm test`): the sources only; no service, no build, no other process to wait for; about 30 s.
 * - types: what TypeScript says of the API: the `*.test-d.ts` type tests, compiled by vitest's
 *   typecheck (`npm run typecheck` compiles them too), and the tests that run the compiler on fixtures.
 * - checks: the testing library's self-tests, `checkStore` and the conformance suites run against zoos
 *   of broken stores and engines until each is caught: CPU-bound minutes that prove the checkers, not
 *   the library's code paths, which the unit tier covers.
 * - integration: real services and processes: redis-server (the tests start their own, on free ports),
 *   PostgreSQL on 127.0.0.1:5432, dynalite, BullMQ, pg-boss, fauxqs, RabbitMQ and NATS, receivers and
 *   deliverers in child processes. Files that check semantics run side by side; those whose subject is
 *   a deadline, an outage or a killed process (SOLO_TESTS) run in integration-solo, one at a time.
 * - package: the built package, dist/, built once by this tier's globalSetup: the packed tarball, the
 *   examples, Bun, Deno and workerd, `next build`, the CLI bin end to end. Name a test that needs dist/
 *   anywhere else `*.package.test.ts`.
 *
 * `npm run test:all` runs them all; `npx vitest run --project <tier>` one of them
 * (`--project 'integration*'` both integration tiers).
 */
export const PACKAGE_TESTS = [
  'test/**/*.package.test.ts',
  'test/consumer/**/*.test.ts',
  'test/examples/**/*.test.ts',
  'test/runtimes/**/*.test.ts',
  'test/adapters/next.test.ts',
  // The documentation's blocks: compiled against dist/ and run as a reader would run them.
  'test/docs/**/*.test.ts',
  // The CLI's tests that run the built bin (dist/cli.js); the others drive src/cli in process.
  'test/cli/{cli-usage,end-to-end,fan-out,sandbox-process,send-replay}.test.ts',
];

export const INTEGRATION_TESTS = [
  // A Lambda cold start in a fresh node process, on a bundle of the sources.
  'test/core/first-delivery.test.ts',
  'test/stores/redis/**/*.test.ts',
  'test/stores/postgres/**/*.test.ts',
  // commands.test.ts drives DynamoDBStore with a recording client: unit.
  'test/stores/dynamodb/{conformance,faults,model,multi-process,ordering}.test.ts',
  'test/inbox/**/*.test.ts',
  'test/sqs/**/*.test.ts',
  'test/pg-boss/**/*.test.ts',
  'test/rabbitmq/**/*.test.ts',
  'test/nats/**/*.test.ts',
  // The ordering guard's property on every built-in store against its real server.
  'test/ordering/ordering-property.test.ts',
  // The test the dashboard exports, run by vitest in a process of its own, as a user would run it.
  'test/dashboard/exported-test.test.ts',
];

/**
 * The testing library's self-tests (the checks tier): line-independent (plain JavaScript against zoos,
 * no Node API a line changes), so `.ci/run` runs them once, on the oldest line.
 */
const CHECK_TESTS = [
  'test/testing/check-store.test.ts',
  'test/testing/store-zoo.test.ts',
  'test/testing/store-zoo-real-clock.test.ts',
  'test/testing/inbox-zoo.test.ts',
  'test/testing/watermark-zoo.test.ts',
];

/**
 * The unit files that change what a module graph holds for the files after them (vi.mock of a source
 * module, vi.stubEnv read at import, vi.resetModules): they run in unit-isolated, each in a graph of
 * its own, while the rest of the unit tier shares one per worker. `npm test` runs both.
 */
const UNIT_ISOLATED_TESTS = [
  'test/core/signature-web-only.test.ts',
  'test/dev/dev-reporter.test.ts',
  'test/core/receiver.test.ts',
];

/**
 * The types tier's files besides the `*.test-d.ts` type tests: those that run the TypeScript compiler
 * on fixtures (what tsc says to a user, declaration merging). Seconds of CPU each, and what they check
 * is the compiler's verdict, which no Node line changes.
 */
const TYPE_TESTS = ['test/types/*.test.ts'];

/**
 * The integration files that get the machine to themselves: what they check is a deadline, an outage,
 * a killed process or a race between processes, timed in hundreds of milliseconds that a busy machine
 * blurs. Two at a time failed CI twice in a day before this split: the SIGKILL test's three workers and
 * door beside the Redis multi-process test's 2,000 concurrent requests put store calls past their 2 s
 * deadline (a 503 where 200 or 409 is expected). Every other integration file checks a store's or an
 * engine's semantics on its server (races decided by the server, duplicates, retries, dead letters,
 * seals, the CLI and dashboard over an admin), with waits that end on an answer, not on a clock: those
 * run side by side. So do the stores' model checks (each store's model.test.ts): the checker reads each call
 * through its measured interval, so a slower call widens an interval and never raises a false alarm
 * (the checks tier's real-clock zoo loads the machine on purpose to prove it), and each runs for a
 * fixed time. Named file by file, so that a new file runs side by side unless it is put here.
 */
export const SOLO_TESTS = [
  // Those whose subject a Node line changes too: NODE_LINE_INTEGRATION_TESTS below runs them on every line.
  ...solosOnEveryLine(),
  // dynalite answers one write after another, in JavaScript: beside two other files, 100 concurrent
  // claims of one event passed the suite's 5 s call deadline.
  'test/stores/dynamodb/conformance.test.ts',
  'test/inbox/sigkill.test.ts',
  'test/sqs/sigkill.test.ts',
  'test/pg-boss/sigkill.test.ts',
  'test/rabbitmq/sigkill.test.ts',
  'test/nats/sigkill.test.ts',
  // A sliding window of handler starts, stamped by the worker after its grant: an event loop that lags
  // behind a busy neighbour stamps a start late, and a window then seems to hold one start too many.
  'test/inbox/flow-control.test.ts',
  'test/pg-boss/flow-control.test.ts',
  'test/sqs/flow-control.test.ts',
  // Figures logged on an interval, and a backlog seen at a given tick.
  'test/inbox/monitor.test.ts',
  // JetStream redelivers after a 3 s AckWait until MaxDeliver: a lagging worker acknowledges late.
  'test/nats/max-deliveries.test.ts',
];

/**
 * The solo files that every Node line runs: sockets that drop or hang, processes started and killed,
 * timers around an outage, modules loaded on first use (a function, so that both lists below can name
 * them before this point of the module).
 */
function solosOnEveryLine(): string[] {
  return [
    'test/core/first-delivery.test.ts',
    'test/stores/redis/faults.test.ts',
    'test/stores/redis/cluster-faults.test.ts',
    'test/stores/redis/multi-process.test.ts',
    'test/stores/redis/lambda-cold-start.test.ts',
    'test/stores/postgres/pool-errors.test.ts',
    'test/stores/dynamodb/faults.test.ts',
    'test/stores/dynamodb/multi-process.test.ts',
    'test/inbox/door-outage.test.ts',
    'test/inbox/worker-lifecycle.test.ts',
    'test/rabbitmq/reconnect.test.ts',
    'test/nats/door.test.ts',
    'test/nats/server-restart.test.ts',
    'test/sqs/door.test.ts',
  ];
}

/**
 * How the tiers share the machine (measured on the 2-core CI machine; see the README's testing section).
 * `npm run test:all` runs them in five groups, one after another (`sequence.groupOrder`): unit,
 * unit-isolated and types together; checks; integration; integration-solo; package. Never a CPU-bound
 * tier beside an integration tier, whose store calls have deadlines of a second or two, nor the checks'
 * minutes of CPU beside the unit tier's timed refusals (slow senders cut off on a deadline). Inside a
 * tier:
 * - unit: twice as many files as cores (4 at least). With the module graph shared per worker its CPU
 *   is about 40 s on 2 cores, and most of its wall time was waits (a dashboard's report wait, leases
 *   outlived): `npm test` went from 63 s to 30 s on a busy 2-core machine. UNIT_WORKERS=<n> overrides;
 * - checks: as many files as cores (2 at least): CPU-bound;
 * - integration: three files at a time (they wait on servers far more than they compute), and the
 *   Redis store's conformance suite runs its tests side by side within its file too (each test uses
 *   fresh ids; the suite's TSDoc says so; PostgreSQL's and dynalite's stay one at a time, whose calls
 *   then passed the suite's call deadline on a loaded machine);
 * - integration-solo: one file at a time (SOLO_TESTS says why);
 * - package: two files at a time: each packs, installs and runs in a folder of its own (the docs'
 *   projects made as Getting started says are shared by rename, which tolerates two makers), servers
 *   listen on free ports, and fan-out uses the Redis on 6379 with its own key prefix.
 */
const UNIT_WORKERS = Number(process.env.UNIT_WORKERS) || Math.max(4, availableParallelism() * 2);
const CHECK_WORKERS = Math.max(2, availableParallelism() - 1);
const INTEGRATION_WORKERS = 3;
const PACKAGE_WORKERS = 2;

/**
 * Files that check what no Node line changes: the store checker's model runs (each store against its
 * server's semantics, about 90 s together), the SIGKILL runs (thousands of events through worker
 * processes killed one after another, per engine, about 80 s together), the conformance suites (about
 * 60 s), TypeScript's verdict on the declarations (tsc 5 and 7 on a consumer project, about 27 s), the
 * other runtimes (Bun, Deno, workerd run the examples, not Node), the checks tier (the testing
 * library's self-tests against its zoos, about 2 minutes of CPU), and the dashboard in Chromium (about
 * 20 s).
 * `.ci/run` runs them once, on the oldest line, and sets `SKIP_LINE_INDEPENDENT=1` for the others,
 * where every engine's and store's other tests still run. An environment variable, because vitest's
 * `--exclude` on the command line does not reach a project's own `exclude`.
 */
const LINE_INDEPENDENT_TESTS = [
  'test/stores/*/model.test.ts',
  'test/{inbox,sqs,pg-boss,rabbitmq,nats}/sigkill.test.ts',
  // The conformance suites: each store's and engine's semantics on its real server, which the
  // driver merely carries; its behaviour on each Node line (sockets, timers, outages) is what the
  // faults, multi-process and worker files check, and they run on every line.
  'test/stores/{redis,dynamodb}/conformance.test.ts',
  'test/{inbox,sqs,pg-boss,rabbitmq,nats}/conformance.test.ts',
  // Flow control: the worker's gate against each engine's shared state (a Redis script, a PostgreSQL
  // statement) and deferrals, measured from handler start times: semantics, not the driver's sockets.
  'test/{inbox,sqs,pg-boss}/flow-control.test.ts',
  'test/sqs/flow-control-redrive.test.ts',
  // The ordering guard's property: what it checks is each store's semantics on its server.
  'test/ordering/ordering-property.test.ts',
  'test/consumer/typescript.test.ts',
  'test/types/declaration-merging.package.test.ts',
  'test/runtimes/**/*.test.ts',
  'test/opentelemetry/workerd.package.test.ts',
  // The dashboard in Chromium: what it checks is the page and the browser's rules (origins, DNS
  // rebinding); the server under it is node:http, whose Node-line behaviour the other tiers cover.
  'test/dashboard/browser.package.test.ts',
  // The docs' snippets and recipes: what they prove is the text, which no Node line changes.
  'test/docs/**/*.test.ts',
];
const skipLineIndependent = process.env.SKIP_LINE_INDEPENDENT === '1' ? LINE_INDEPENDENT_TESTS : [];
/**
 * The integration files the other Node lines run (`SKIP_LINE_INDEPENDENT=1`): those whose subject is
 * what a Node line changes under a driver, namely sockets that drop or hang, processes started and killed,
 * timers around an outage, modules loaded on first use, and AsyncLocalStorage carrying a trace. Every
 * other integration file checks a store's or an engine's semantics on its real server (races,
 * duplicates, retries, dead letters, seals, the CLI and dashboard over an admin). The driver carries
 * those whatever Node runs it, so they run once, on the oldest line, with the rest of the tiers.
 */
const NODE_LINE_INTEGRATION_TESTS = [
  ...solosOnEveryLine(),
  // AsyncLocalStorage carrying a trace, and the workers' timers around retries and deferrals.
  'test/inbox/telemetry.test.ts',
  'test/pg-boss/inbox.test.ts',
  'test/sqs/worker.test.ts',
];
// Named file by file, so a renamed file fails here rather than silently leaving a tier or a line.
for (const file of [...NODE_LINE_INTEGRATION_TESTS, ...SOLO_TESTS, ...CHECK_TESTS, ...UNIT_ISOLATED_TESTS])
  if (!existsSync(new URL(file, import.meta.url)))
    throw new Error(`vitest.config.ts: ${file} does not exist.`);
const lineIntegration = (solo: boolean) =>
  NODE_LINE_INTEGRATION_TESTS.filter((file) => SOLO_TESTS.includes(file) === solo);

export default defineConfig({
  resolve: { alias: packageAliases },
  // `.ci/run` runs several vitest processes side by side, each with a cache of its own: they would
  // otherwise write one results file over one another (a half-written one fails the next run's start).
  ...(process.env.VITEST_CACHE_DIR ? { cacheDir: process.env.VITEST_CACHE_DIR } : {}),
  test: {
    testTimeout: 20_000,
    hookTimeout: 120_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: [
            ...configDefaults.exclude,
            ...INTEGRATION_TESTS,
            ...PACKAGE_TESTS,
            ...CHECK_TESTS,
            ...TYPE_TESTS,
            ...UNIT_ISOLATED_TESTS,
            ...skipLineIndependent,
          ],
          // The files of a worker share one module graph: each file imported the sources afresh, which
          // was two thirds of the tier's CPU time (94 s of CPU against 32 s shared, on 2 cores).
          isolate: false,
          maxWorkers: UNIT_WORKERS,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'unit-isolated',
          include: UNIT_ISOLATED_TESTS,
          exclude: [...configDefaults.exclude, ...skipLineIndependent],
          maxWorkers: UNIT_WORKERS,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'types',
          include: TYPE_TESTS,
          exclude: [...configDefaults.exclude, ...PACKAGE_TESTS],
          // TYPE_TESTS_CHECKED_ELSEWHERE=1 (`.ci/run`): the type-test files' verdict is the typecheck's,
          // `tsc --noEmit` on this same tsconfig.json, whose `include` holds every test-d file; a second
          // whole-project tsc here took about 3 minutes of CI's busiest stretch. The tier's other files run.
          typecheck: {
            enabled: process.env.TYPE_TESTS_CHECKED_ELSEWHERE !== '1',
            include: ['test/**/*.test-d.ts'],
            tsconfig: './tsconfig.json',
          },
          // vitest runs the projects of one group in one pool, which must have one size.
          maxWorkers: UNIT_WORKERS,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'checks',
          include: CHECK_TESTS,
          maxWorkers: CHECK_WORKERS,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: process.env.SKIP_LINE_INDEPENDENT === '1' ? lineIntegration(false) : INTEGRATION_TESTS,
          exclude: [...configDefaults.exclude, ...PACKAGE_TESTS, ...SOLO_TESTS, ...skipLineIndependent],
          maxWorkers: INTEGRATION_WORKERS,
          sequence: { groupOrder: 2 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration-solo',
          include: process.env.SKIP_LINE_INDEPENDENT === '1' ? lineIntegration(true) : SOLO_TESTS,
          exclude: [...configDefaults.exclude, ...skipLineIndependent],
          maxWorkers: 1,
          sequence: { groupOrder: 3 },
        },
      },
      {
        extends: true,
        test: {
          name: 'package',
          include: PACKAGE_TESTS,
          // Each test starts processes (npm, the CLI, servers, compilers) on the built package; in CI
          // they share the machine with two other lanes, where a docs walkthrough of the CLI took
          // past the default 20 s.
          testTimeout: 60_000,
          exclude: [...configDefaults.exclude, ...skipLineIndependent],
          globalSetup: ['test/support/build.global-setup.ts'],
          maxWorkers: PACKAGE_WORKERS,
          sequence: { groupOrder: 4 },
        },
      },
    ],
  },
});
