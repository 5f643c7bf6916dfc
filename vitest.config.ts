import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';
import { vitestAliases } from './subpaths.mjs';

/** Tests import the package by name, as users do; the aliases point those names at the sources. */
export const packageAliases = vitestAliases(fileURLToPath(new URL('./', import.meta.url)));

/**
 * The tiers. Every test file is in exactly one: the package tier takes what matches PACKAGE_TESTS, the
 * integration tier what matches INTEGRATION_TESTS (and not PACKAGE_TESTS), the unit tier the rest.
 *
 * - unit (`npm test`): the sources only; no service, no build, no other process to wait for.
 * - integration: real services and processes: redis-server (the tests start their own, on free ports),
 *   PostgreSQL on 127.0.0.1:5432, dynalite, BullMQ, receivers and deliverers in child processes.
 * - package: the built package, dist/, built once by this tier's globalSetup: the packed tarball, the
 *   examples, Bun, Deno and workerd, `next build`, the CLI bin end to end. Name a test that needs dist/
 *   anywhere else `*.package.test.ts`.
 *
 * `npm run test:all` runs the three; `npx vitest run --project <tier>` one of them.
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
];

/**
 * How the tiers share the machine (measured on the 2-core CI machine; see the README's testing section).
 * `npm run test:all` runs them one after another (`sequence.groupOrder`), never side by side: the unit
 * tier keeps every core busy, the package tier builds (tsup, `next build`, npm pack), and the
 * integration tier's fault tests time outages in hundreds of milliseconds, which a busy machine blurs.
 * Inside a tier, files run side by side where that is safe:
 * - unit: CPU-bound and self-contained, as many files as cores (2 at least: 54 s → 31 s on 2 cores);
 * - integration: one file at a time. Two at a time saved about 20 s but failed CI twice in a day: the
 *   SIGKILL test's three workers and door beside the Redis multi-process test's 2,000 concurrent
 *   requests put store calls past their 2 s deadline (a 503 where 200 or 409 is expected). Those
 *   deadlines and outages are what these tests check, so each file gets the machine to itself;
 * - package: one file at a time (it builds and installs; fan-out uses the Redis on 6379 with its own
 *   key prefix).
 */
const UNIT_WORKERS = Math.max(2, availableParallelism() - 1);

/**
 * Files that check what no Node line changes: the store checker's model runs (each store against its
 * server's semantics, about 90 s together), the SIGKILL runs (thousands of events through worker
 * processes killed one after another, per engine, about 80 s together), the conformance suites (about
 * 60 s), TypeScript's verdict on the declarations (tsc 5 and 7 on a consumer project, about 27 s), the
 * other runtimes (Bun, Deno, workerd run the examples, not Node), the testing library's self-tests
 * against their zoos of broken stores and engines (about 32 s), and the dashboard in Chromium (about
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
  'test/testing/{inbox-zoo,store-zoo-real-clock}.test.ts',
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
  'test/inbox/telemetry.test.ts',
  'test/pg-boss/inbox.test.ts',
  'test/sqs/door.test.ts',
  'test/sqs/worker.test.ts',
  'test/rabbitmq/reconnect.test.ts',
  'test/nats/door.test.ts',
  'test/nats/server-restart.test.ts',
];
// Named file by file, so a renamed file fails here rather than silently leaving the other lines.
for (const file of NODE_LINE_INTEGRATION_TESTS)
  if (!existsSync(new URL(file, import.meta.url)))
    throw new Error(`vitest.config.ts: ${file} does not exist.`);

export default defineConfig({
  resolve: { alias: packageAliases },
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
            ...skipLineIndependent,
          ],
          typecheck: { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: './tsconfig.json' },
          maxWorkers: UNIT_WORKERS,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include:
            process.env.SKIP_LINE_INDEPENDENT === '1' ? NODE_LINE_INTEGRATION_TESTS : INTEGRATION_TESTS,
          exclude: [...configDefaults.exclude, ...PACKAGE_TESTS, ...skipLineIndependent],
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'package',
          include: PACKAGE_TESTS,
          exclude: [...configDefaults.exclude, ...skipLineIndependent],
          globalSetup: ['test/support/build.global-setup.ts'],
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
