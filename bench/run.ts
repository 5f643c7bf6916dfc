/**
 * `npm run bench`: build the package, measure it as users get it (imported by name from dist) against
 * the floor and the peers, print every figure as a ratio from this one run, and write bench/RESULTS.md.
 * `BENCH_SKIP_BUILD=1` uses the dist already built.
 *
 * `BENCH_QUICK=1` is the smoke run CI makes on a fresh clone (written to bench/.tmp/RESULTS-quick.md;
 * its ratios are not read): every section once, briefly, in one configuration, still building its
 * servers and processes, so a bench that no longer starts or a receiver that refuses deliveries fails
 * it. Each section picks its configuration where it lists them: 1 the core at 2 KiB (and Web Crypto
 * against node:crypto); 1c the ~300 B event; 1e the SDK registered; 1f the first-party schemas at
 * 300 B; 1g unguarded, serialize and latest on MemoryStore, and RedisStore's round trips and one
 * deliveries/s round; 1d the shared harness at 300 B (its telemetry copies written, not run); 3b as
 * in full; 1b a brought store against octokit; 2 the node adapter against the hand-written node:http
 * route, one round (no octokit, A/A copy, Express or Fastify); 3 RedisStore alone; 5 the BullMQ door
 * and the in-request receiver with the no-op handler, and one end-to-end run (BullMQ, one worker); 4
 * the node adapter, one 1 MiB body at a time. A figure it leaves out reads "n/a (quick)", or its row
 * is left out.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { ColdStartResult } from './cold-start.js';
import type { CoreResults } from './core.js';
import {
  AutocannonLoad,
  type BigBodyResult,
  CONNECTIONS,
  DeliveryPool,
  deliveriesPerReceiver,
  HTTP_BODY_BYTES,
  HTTP_ROUNDS,
  HTTP_SECONDS,
  HTTP_SLICES,
  type HttpGroupResult,
  type LoadGenerator,
  latencyRatio,
  pinLoadGenerator,
  roundRatio,
  runBigBodies,
  runGroup,
  sliceLatencyRatio,
  WARMUP,
} from './http.js';
import type { OrderingCostResult } from './ordering-cost.js';
import type { SchemaCostRow } from './schema-cost.js';
import type { VariantName } from './server.js';
import type { ServerCostRow } from './server-cost.js';
import { formatBytes, median, QUICK } from './shared.js';
import { telemetryHarness } from './steady-state-harness.mjs';
import type { TelemetryCostRow, TelemetryMode } from './telemetry-cost.js';
import { WrkLoad, wrkVersion } from './wrk.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const started = Date.now();
const log = (line: string) => process.stdout.write(`${line}\n`);

function build(): string {
  if (process.env.BENCH_SKIP_BUILD === '1') return 'skipped (BENCH_SKIP_BUILD=1)';
  const result = spawnSync('npm', ['run', 'build'], { cwd: root, encoding: 'utf8' });
  if (result.status === 0) return 'built by this run';
  // The tree is shared: an entry another change is adding may not exist yet. Measure the last good build.
  if (!existsSync(`${root}dist/index.js`)) throw new Error(`npm run build failed:\n${result.stderr}`);
  log(
    `warning: npm run build failed; measuring the existing dist.\n${result.stderr.trim().split('\n').slice(-3).join('\n')}`,
  );
  return 'build failed; existing dist measured';
}

function version(name: string): string {
  try {
    const json = readFileSync(`${root}node_modules/${name}/package.json`, 'utf8');
    return (JSON.parse(json) as { version: string }).version;
  } catch {
    return 'not installed';
  }
}

function git(...args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

function memoryPerId(): { store: number; lru: number; idLength: number } {
  const result = spawnSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', fileURLToPath(new URL('./memory.ts', import.meta.url))],
    {
      encoding: 'utf8',
      env: { ...process.env, TSX_TSCONFIG_PATH: fileURLToPath(new URL('./tsconfig.json', import.meta.url)) },
    },
  );
  if (result.status !== 0) throw new Error(`memory.ts failed:\n${result.stderr}`);
  return JSON.parse(result.stdout) as { store: number; lru: number; idLength: number };
}

interface Row {
  readonly measure: string;
  readonly value: string;
  readonly target: string;
  readonly met: boolean | undefined;
  readonly context: string;
}

/** What a row shows for a figure not measured: in a smoke run, mostly a configuration it leaves out. */
const NOT_MEASURED = QUICK ? 'n/a (quick)' : 'n/a';
const x = (ratio: number) => (Number.isNaN(ratio) ? NOT_MEASURED : `${ratio.toFixed(2)}×`);
const rps = (group: HttpGroupResult, variant: VariantName) => {
  const values = group[variant]?.rps;
  return values ? `${Math.round(median(values)).toLocaleString('en-US')} req/s` : 'not run';
};
const busy = (group: HttpGroupResult, variant: VariantName) => {
  const values = group[variant]?.loadgen;
  return values ? `${Math.round(median(values) * 100)}%` : 'n/a';
};
const latency = (group: HttpGroupResult, variant: VariantName) => {
  const entry = group[variant];
  if (!entry) return 'not run';
  const [p50, p99] = entry.latency.quantiles(0.5, 0.99) as [number, number];
  return `p50 ${p50.toFixed(2)} ms / p99 ${p99.toFixed(2)} ms`;
};

/** The lowest and highest per-round ratio: how far one round swings on this machine. */
function roundSpread(
  group: HttpGroupResult,
  a: VariantName,
  b: VariantName,
  metric: 'rps' | 'cpu' | 'p99',
): string {
  const as = group[a]?.[metric] ?? [];
  const bs = group[b]?.[metric] ?? [];
  const ratios = as.slice(0, bs.length).map((value, i) => value / bs[i]!);
  if (ratios.length === 0) return 'n/a';
  return `${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}×`;
}

function check(ratio: number, target: number, atLeast: boolean): boolean | undefined {
  if (Number.isNaN(ratio)) return undefined;
  return atLeast ? ratio >= target : ratio <= target;
}

/**
 * A section in a process of its own, with --expose-gc (no other section's heap to collect): its
 * progress lines pass through, and its rows come back as JSON on stdout.
 */
function ownProcess<T>(script: string, args: readonly string[], log: (line: string) => void): T {
  const result = spawnSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', fileURLToPath(new URL(script, import.meta.url)), ...args, '--json'],
    {
      encoding: 'utf8',
      env: { ...process.env, TSX_TSCONFIG_PATH: fileURLToPath(new URL('./tsconfig.json', import.meta.url)) },
    },
  );
  for (const line of result.stderr.split('\n')) if (line.trim() !== '') log(line);
  if (result.status !== 0) throw new Error(`${script} failed (its output is above).`);
  return JSON.parse(result.stdout) as T;
}

/**
 * The shared harness that judges the core's cost (`../shared/bench/core-cost.mjs`, kept outside this
 * repository), run on this build at the two sizes its targets name. Each run is a process of its own;
 * its verdict line is read, its exit code (1 above its own target) is not.
 */
interface SharedCoreCost {
  readonly size: number;
  readonly target: number;
  /** Median over rounds of core/floor CPU time; NaN when the harness is not beside the repository. */
  readonly ratio: number;
  readonly line: string;
  /**
   * The same harness, its receiver with `telemetry: openTelemetry()`: the API alone, and the SDK
   * registered; undefined in the smoke run, which runs the harness itself alone.
   */
  readonly telemetry: Record<TelemetryMode, { readonly ratio: number; readonly line: string }> | undefined;
}

const SHARED_CORE_COST = fileURLToPath(new URL('../../shared/bench/core-cost.mjs', import.meta.url));
// The smoke run: 300 B alone.
const SHARED_TARGETS = QUICK
  ? ([{ size: 300, target: 1.15 }] as const)
  : ([
      { size: 300, target: 1.15 },
      { size: 2048, target: 1.1 },
    ] as const);

function sharedCoreCost(log: (line: string) => void): SharedCoreCost[] {
  return SHARED_TARGETS.map(({ size, target }) => {
    if (!existsSync(SHARED_CORE_COST)) {
      const line = `${SHARED_CORE_COST} not found: run the bench from a checkout with ../shared beside it`;
      log(`  ${line}`);
      const missing = { ratio: Number.NaN, line };
      return {
        size,
        target,
        ratio: Number.NaN,
        line,
        telemetry: { api: missing, sdk: missing },
      };
    }
    const run = (harness: string) => {
      const result = spawnSync(process.execPath, [harness], {
        cwd: root,
        encoding: 'utf8',
        env: {
          ...process.env,
          SIZE: String(size),
          TARGET: String(target),
          ...(QUICK ? { ROUNDS: '1', N: '400' } : {}),
        },
      });
      const line = result.stdout.split('\n').find((text) => text.startsWith('core/floor')) ?? '';
      const ratio = Number(/: ([\d.]+)x CPU time/.exec(line)?.[1] ?? Number.NaN);
      if (Number.isNaN(ratio))
        throw new Error(`core-cost.mjs gave no verdict at ${size} B:\n${result.stdout}${result.stderr}`);
      return { ratio, line };
    };
    const { ratio, line } = run(SHARED_CORE_COST);
    log(`  ${line}`);
    // The smoke run: the harness itself, not its telemetry copies. They are still written, so a
    // harness whose code no longer has the lines they patch fails the smoke run too.
    if (QUICK) {
      for (const mode of ['api', 'sdk'] as const) telemetryHarness(SHARED_CORE_COST, mode);
      return { size, target, ratio, line, telemetry: undefined };
    }
    const api = run(telemetryHarness(SHARED_CORE_COST, 'api'));
    log(`  telemetry with the API alone: ${api.line}`);
    const sdk = run(telemetryHarness(SHARED_CORE_COST, 'sdk'));
    log(`  telemetry with the SDK registered: ${sdk.line}`);
    return { size, target, ratio, line, telemetry: { api, sdk } };
  });
}

function sharedCoreCostRows(results: readonly SharedCoreCost[]): Row[] {
  const context = (line: string) => line.replace(/^core\/floor per delivery at \d+ B: [\d.]+x CPU time /, '');
  return results.flatMap(({ size, target, ratio, line, telemetry }) => [
    {
      measure: `core handle() CPU / floor pipeline by the shared harness (../shared/bench/core-cost.mjs), ${formatBytes(size)}`,
      value: x(ratio),
      target: `≤ ${target.toFixed(2)}×`,
      met: check(ratio, target, false),
      context: context(line),
    },
    ...(telemetry
      ? (['api', 'sdk'] as const).map((mode) => ({
          measure: `the shared harness with \`telemetry: openTelemetry()\`, ${mode === 'api' ? '@opentelemetry/api alone (no SDK)' : 'the OpenTelemetry SDK registered'}, ${formatBytes(size)}`,
          value: x(telemetry[mode].ratio),
          target: '(reported)',
          met: undefined,
          context: context(telemetry[mode].line),
        }))
      : []),
  ]);
}

function schemaCostRows(rows: readonly SchemaCostRow[]): Row[] {
  return rows.map((row) => {
    const target = row.schema === 'first-party' && row.size === 300 ? 1 : undefined;
    return {
      measure: `CPU added to a delivery by \`schemas\`: ${row.schema === 'first-party' ? 'the first-party schemas (service-webhooks/schemas)' : 'a zod 4 schema of the same rules'}, A/B in one process, ${formatBytes(row.size)}`,
      value: `${row.addedMicros >= 0 ? '+' : ''}${row.addedMicros.toFixed(2)} µs`,
      target: target === undefined ? '(reported)' : `≤ +${target.toFixed(2)} µs`,
      met: target === undefined ? undefined : row.addedMicros <= target,
      context: `${row.withMicros.toFixed(2)} vs ${row.withoutMicros.toFixed(2)} CPU µs per delivery; ${row.rounds} A-B-B-A rounds`,
    };
  });
}

function orderingCostRows(result: OrderingCostResult): Row[] {
  const { memory, redis } = result;
  const micros = (value: number) => `${value >= 0 ? '+' : ''}${value.toFixed(2)} µs`;
  const rows: Row[] = (['serialize', 'latest'] as const).map((mode) => ({
    measure: `CPU added to a delivery by \`ordering\` (${mode}), MemoryStore, A/B in one process, ~300 B, 1,000 resources`,
    value: micros(memory.addedMicros[mode]),
    target: '(reported)',
    met: undefined,
    context: `${memory.micros[mode].toFixed(2)} vs ${memory.micros.unguarded.toFixed(2)} CPU µs per delivery unguarded; ${memory.rounds} A-B-B-A rounds`,
  }));
  if ('skipped' in redis) {
    rows.push({
      measure: 'RedisStore: a guarded delivery (`ordering`, latest) against an unguarded one',
      value: 'not run',
      target: '(reported)',
      met: undefined,
      context: redis.skipped,
    });
    return rows;
  }
  rows.push(
    {
      measure: 'RedisStore round trips per delivery, guarded (`ordering`, latest) against unguarded',
      value: `${redis.roundTrips.latest.toFixed(2)} vs ${redis.roundTrips.unguarded.toFixed(2)}`,
      target: '(reported)',
      met: undefined,
      context:
        'commands the store client sent per delivery, sequential deliveries (claim, claimResource, completeOrdered against claim, complete)',
    },
    {
      measure:
        'RedisStore deliveries/s, guarded (`ordering`, latest) / unguarded, 64 in flight in one process',
      value: x(redis.ratio),
      target: '(reported)',
      met: undefined,
      context: `${Math.round(redis.perSecond.latest)} vs ${Math.round(redis.perSecond.unguarded)} deliveries/s; ${redis.rounds} A-B-B-A rounds`,
    },
  );
  return rows;
}

function telemetryCostRows(rows: readonly TelemetryCostRow[]): Row[] {
  return rows.map((row) => ({
    measure:
      row.mode === 'api'
        ? 'CPU added to a delivery by `telemetry: openTelemetry()` with @opentelemetry/api alone (no SDK), A/B in one process, ~300 B'
        : 'CPU added to a delivery by `telemetry: openTelemetry()` with the OpenTelemetry SDK registered (span, context, 3 metric records), A/B in one process, ~300 B',
    value: `${row.addedMicros >= 0 ? '+' : ''}${row.addedMicros.toFixed(2)} µs`,
    target: row.mode === 'api' ? '≤ +0.30 µs' : '(reported)',
    met: row.mode === 'api' ? row.addedMicros <= 0.3 : undefined,
    context: `${row.withMicros.toFixed(2)} vs ${row.withoutMicros.toFixed(2)} CPU µs per delivery (${row.ratio.toFixed(3)}×); ${row.rounds} A-B-B-A rounds`,
  }));
}

function serverCostRows(rows: readonly ServerCostRow[]): Row[] {
  return rows.map((row) => ({
    measure: `core handle() CPU / floor pipeline, as a server pays it (fresh fixtures, event-loop turns), ${row.shape}`,
    value: x(row.ratio),
    target: '≤ 1.15×',
    met: check(row.ratio, 1.15, false),
    context: `+${row.overFloorMicros.toFixed(2)} CPU µs per delivery over the floor (core ${row.coreMicros.toFixed(2)}, floor ${row.floorMicros.toFixed(2)} µs); ${row.rounds} A-B-B-A rounds`,
  }));
}

function coreRows(core: CoreResults): Row[] {
  const rows: Row[] = [];
  for (const size of core.sizes) {
    const limit = size.size === 2048 ? 1.15 : size.size >= 65_536 ? 1.05 : undefined;
    const µs = (name: string) => `${((size.ns[name] ?? Number.NaN) / 1000).toFixed(2)} µs`;
    rows.push({
      measure: `core handle() time / floor pipeline, ${formatBytes(size.size)}`,
      value: x(size.coreOverPipeline),
      target: limit === undefined ? '(reported)' : `≤ ${limit.toFixed(2)}×`,
      met: limit === undefined ? undefined : check(size.coreOverPipeline, limit, false),
      context: `core ${µs('core')}, pipeline ${µs('pipeline')}, floor ${µs('floor')} (core/floor ${x(size.coreOverFloor)})`,
    });
    rows.push({
      measure: `octokit verifyAndReceive + lru-cache dedup (the same work) time / core handle(), ${formatBytes(size.size)}`,
      value: x(size.octokitDedupOverCore),
      target: '> 1.00×',
      met: Number.isNaN(size.octokitDedupOverCore) ? undefined : size.octokitDedupOverCore > 1,
      context: `octokit with dedup ${µs('octokitDedup')}; round by round ${size.octokitDedupOverCoreRange.map((r) => r.toFixed(2)).join('-')}×`,
    });
    rows.push({
      measure: `octokit verifyAndReceive alone (no dedup) time / core handle(), ${formatBytes(size.size)}`,
      value: x(size.octokitOverCore),
      target: '(reported: less work than the core)',
      met: undefined,
      context: `octokit ${µs('octokit')}; octokit alone / floor pipeline ${x(size.octokitOverPipeline)}`,
    });
  }
  rows.push({
    measure: 'Web Crypto receiver handle() throughput / node:crypto receiver, 2 KiB',
    value: x(core.web.handleWebOverNode),
    target: '(reported; reference ~0.3× for verify)',
    met: undefined,
    context: `${((core.web.ns.handleWeb ?? 0) / 1000).toFixed(2)} µs vs ${((core.web.ns.handleNode ?? 0) / 1000).toFixed(2)} µs`,
  });
  rows.push({
    measure: 'verifySignatureWeb throughput / verifySignature (one-shot, key imported per call), 2 KiB',
    value: x(core.web.verifyWebOverNode),
    target: '(reported)',
    met: undefined,
    context: `${((core.web.ns.verifyWeb ?? 0) / 1000).toFixed(2)} µs vs ${((core.web.ns.verifyNode ?? 0) / 1000).toFixed(2)} µs`,
  });
  return rows;
}

function httpRows(
  node: HttpGroupResult,
  expressGroup: HttpGroupResult,
  fastifyGroup: HttpGroupResult,
): Row[] {
  const pair = (
    group: HttpGroupResult,
    a: VariantName,
    b: VariantName,
    what: string,
    target: number,
  ): Row[] => [
    {
      measure: `${what}: req/s ratio`,
      value: x(roundRatio(group, a, b, 'rps')),
      target: `≥ ${target.toFixed(2)}×`,
      met: check(roundRatio(group, a, b, 'rps'), target, true),
      context: `${a} ${rps(group, a)}, ${b} ${rps(group, b)}; round by round ${roundSpread(group, a, b, 'rps')}; load generator busy ${busy(group, a)} / ${busy(group, b)}`,
    },
  ];
  const cpu = (group: HttpGroupResult, a: VariantName, b: VariantName, what: string): Row => {
    const perRequest = (variant: VariantName) => {
      const values = group[variant]?.cpu;
      return values ? `${median(values).toFixed(1)} µs` : 'not run';
    };
    return {
      measure: `${what}: server CPU per request ratio`,
      value: x(roundRatio(group, a, b, 'cpu')),
      target: '(supporting: lower is better)',
      met: undefined,
      context: `${a} ${perRequest(a)}, ${b} ${perRequest(b)}; round by round ${roundSpread(group, a, b, 'cpu')}`,
    };
  };
  // Identical code on both sides: how far apart this run puts two things that cannot differ.
  const control = (group: HttpGroupResult, a: VariantName, b: VariantName, what: string): Row => ({
    measure: `${what}: req/s ratio`,
    value: x(roundRatio(group, a, b, 'rps')),
    target: '(control: 1.00× but for noise)',
    met: undefined,
    context: `round by round ${roundSpread(group, a, b, 'rps')}; server CPU per request ${x(roundRatio(group, a, b, 'cpu'))} (round by round ${roundSpread(group, a, b, 'cpu')}); p99 ${x(latencyRatio(group, a, b, 0.99))} (slice by slice ${x(sliceLatencyRatio(group, a, b))})`,
  });
  // The 1.15× target assumes octokit runs well below a minimal route (the issue's reference: 0.86×).
  // How far below it runs depends on the machine; this row shows what even the minimal route reaches.
  const ceiling = (group: HttpGroupResult): Row => ({
    measure: 'hand-written node:http / octokit createNodeMiddleware: req/s ratio',
    value: x(roundRatio(group, 'node-hand', 'node-octokit', 'rps')),
    target: '(reported: what the node adapter / octokit target assumes; the reference ~1.16×)',
    met: undefined,
    context: `round by round ${roundSpread(group, 'node-hand', 'node-octokit', 'rps')}; server CPU per request ${x(roundRatio(group, 'node-hand', 'node-octokit', 'cpu'))}`,
  });
  const p99 = (group: HttpGroupResult, a: VariantName, b: VariantName, what: string): Row => ({
    measure: `${what}: p99 ratio`,
    value: x(latencyRatio(group, a, b, 0.99)),
    target: '≤ 1.10×',
    met: check(latencyRatio(group, a, b, 0.99), 1.1, false),
    context: `${a} ${latency(group, a)}; ${b} ${latency(group, b)}; round by round ${roundSpread(group, a, b, 'p99')}; median of slice-by-slice ratios ${x(sliceLatencyRatio(group, a, b))}`,
  });
  return [
    control(node, 'node-hand-copy', 'node-hand', 'hand-written node:http / a second copy of itself (A/A)'),
    ...pair(node, 'node-adapter', 'node-hand', 'node adapter / hand-written node:http', 0.95),
    p99(node, 'node-adapter', 'node-hand', 'node adapter / hand-written node:http'),
    cpu(node, 'node-adapter', 'node-hand', 'node adapter / hand-written node:http'),
    ...pair(node, 'node-adapter', 'node-octokit', 'node adapter / octokit createNodeMiddleware', 1.15),
    cpu(node, 'node-adapter', 'node-octokit', 'node adapter / octokit createNodeMiddleware'),
    ceiling(node),
    ...pair(
      expressGroup,
      'express-adapter',
      'express-hand',
      'Express adapter / express.raw + hand-written',
      1,
    ),
    p99(expressGroup, 'express-adapter', 'express-hand', 'Express adapter / express.raw + hand-written'),
    cpu(expressGroup, 'express-adapter', 'express-hand', 'Express adapter / express.raw + hand-written'),
    ...pair(
      fastifyGroup,
      'fastify-adapter',
      'fastify-hand',
      'Fastify adapter / hand-written Fastify route',
      0.95,
    ),
    p99(fastifyGroup, 'fastify-adapter', 'fastify-hand', 'Fastify adapter / hand-written Fastify route'),
    cpu(fastifyGroup, 'fastify-adapter', 'fastify-hand', 'Fastify adapter / hand-written Fastify route'),
  ];
}

function storeRows(stores: HttpGroupResult, perId: { store: number; lru: number; idLength: number }): Row[] {
  const ratio = roundRatio(stores, 'node-redis', 'node-adapter', 'rps');
  return [
    {
      measure: `RedisStore / MemoryStore deliveries/s (node adapter, ${CONNECTIONS} connections)`,
      value: x(ratio),
      target: '≥ 0.50×',
      met: check(ratio, 0.5, true),
      context: `redis ${rps(stores, 'node-redis')}, memory ${rps(stores, 'node-adapter')}; receiver CPU per request redis/memory ${x(roundRatio(stores, 'node-redis', 'node-adapter', 'cpu'))}; load generator busy ${busy(stores, 'node-redis')} / ${busy(stores, 'node-adapter')}`,
    },
    {
      measure: `RedisStore with ioredis enableAutoPipelining / MemoryStore deliveries/s (${CONNECTIONS} connections)`,
      value: x(roundRatio(stores, 'node-redis-pipelined', 'node-adapter', 'rps')),
      target: '(reported: the README recommends it under concurrent load)',
      met: undefined,
      context: `pipelined ${rps(stores, 'node-redis-pipelined')}, load generator busy ${busy(stores, 'node-redis-pipelined')}; receiver CPU per request pipelined/memory ${x(roundRatio(stores, 'node-redis-pipelined', 'node-adapter', 'cpu'))}; latency ${latency(stores, 'node-redis-pipelined')} vs plain RedisStore ${latency(stores, 'node-redis')}`,
    },
    {
      measure: `MemoryStore heap per remembered id (100,000 completed, ${perId.idLength}-char ids)`,
      value: `${Math.round(perId.store)} B`,
      target: '≤ 256 B',
      met: perId.store <= 256,
      context: `bare lru-cache of the same ids: ${Math.round(perId.lru)} B (store/lru ${x(perId.store / perId.lru)})`,
    },
  ];
}

function coldStartRows(cold: ColdStartResult): Row[] {
  const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
  const octokit = cold.bundles.octokit!;
  const largest = (variant: 'ours' | 'ours-store') =>
    (cold.ourModules[variant] ?? [])
      .slice(0, 5)
      .map(({ name, bytes }) => `${name} ${kib(bytes)}`)
      .join(', ');
  // The smoke run samples fewer variants (bench/cold-start.ts): a row stands only on variants sampled.
  const sampled = (variant: 'ours' | 'ours-store' | 'ours-dynamodb' | 'octokit') =>
    cold.samples[variant] !== undefined;
  const lru = cold.bundles.ours?.packageGzip.find((input) => input.name === 'lru-cache')?.bytes ?? 0;
  const dynamodb = cold.bundles['ours-dynamodb'];
  const medianOf = (
    variant: 'ours' | 'ours-store' | 'ours-dynamodb' | 'octokit',
    key: 'totalMs' | 'deliveryMs',
  ) => median((cold.samples[variant] ?? []).map((sample) => sample[key]));
  const ms = (value: number) => (Number.isNaN(value) ? NOT_MEASURED : `${value.toFixed(1)} ms`);
  // Issue 46's targets: a brought store ≤ 1.3×, the default memory store ≤ 1.6×, each first delivery
  // ≤ 1.5 ms. The gzip targets (≤ 3× and ≤ 4.25×) are declined; the ratios are still reported.
  const variants = [
    { variant: 'ours', label: 'default memory store', time: 1.6 },
    { variant: 'ours-store', label: 'a brought store (service-webhooks/core)', time: 1.3 },
  ] as const;
  const FIRST_DELIVERY_MS = 1.5;
  const firstDeliveries = (['ours-store', 'ours'] as const)
    .filter(sampled)
    .map((variant) => medianOf(variant, 'deliveryMs'));
  const firstDeliveryRow: Row = {
    measure:
      'Lambda first delivery alone (fresh node process, after the import), a brought store / the default memory store',
    value: `${ms(medianOf('ours-store', 'deliveryMs'))} / ${ms(medianOf('ours', 'deliveryMs'))}`,
    target: `≤ ${FIRST_DELIVERY_MS} ms`,
    met: firstDeliveries.length === 0 ? undefined : Math.max(...firstDeliveries) <= FIRST_DELIVERY_MS,
    context: `octokit ${ms(medianOf('octokit', 'deliveryMs'))} (mostly its first HMAC, which ours makes at import for the dedup scope); medians of the samples above`,
  };
  const inContext: Row[] = sampled('ours-dynamodb')
    ? [
        {
          measure:
            'Lambda cold start with the DynamoDB store and the AWS SDK loaded from node_modules, as Lambda provides it (no network): import + first delivery',
          value: ms(medianOf('ours-dynamodb', 'totalMs')),
          target: '(reported)',
          met: undefined,
          context: `ours alone (a brought store) ${ms(medianOf('ours-store', 'totalMs'))}, octokit ${ms(medianOf('octokit', 'totalMs'))} (medians); the SDK's load, client, signing and (de)serialization are the rest; ${describeSamples(cold.samples['ours-dynamodb']!)}`,
        },
      ]
    : [];
  const rowsOf = ({ variant, label, time }: (typeof variants)[number]): Row[] => {
    if (!sampled(variant)) return [];
    const ratio = cold.ratios[variant]!;
    const bundle = cold.bundles[variant]!;
    const hasLru = bundle.packageGzip.some((input) => input.name === 'lru-cache');
    return [
      {
        measure: `Lambda cold start, ${label} (import + first delivery of an esbuild bundle, fresh node process): ours / octokit`,
        value: x(ratio.totalRatio),
        target: `≤ ${time.toFixed(2)}×`,
        met: check(ratio.totalRatio, time, false),
        context: `ours ${describeSamples(cold.samples[variant]!)}; octokit ${describeSamples(cold.samples.octokit!)}; p90 ratio ${x(ratio.p90Ratio)}, CPU ratio ${x(ratio.cpuRatio)}; ${cold.rounds} samples each, every order in turn`,
      },
      {
        measure: `Lambda bundle size, ${label}, gzip (esbuild, minified, node20): ours / octokit`,
        value: x(ratio.gzipRatio),
        target: '(declined)',
        met: undefined,
        context: `ours ${kib(bundle.gzip)} gzip (${kib(bundle.bytes)} minified), octokit ${kib(octokit.gzip)} (${kib(octokit.bytes)}); ${
          variant === 'ours'
            ? `lru-cache is ${kib(lru)} of ours gzipped (without it ${x((bundle.gzip - lru) / octokit.gzip)})`
            : `lru-cache ${hasLru ? 'IS' : 'is not'} in it${dynamodb ? `; with the DynamoDB store (AWS SDK left out) ${kib(dynamodb.gzip)} gzip, ${x(dynamodb.gzip / octokit.gzip)}` : ''}`
        }; largest modules, minified (built from the sources): ${largest(variant)}`,
      },
    ];
  };
  return [...rowsOf(variants[0]), firstDeliveryRow, ...rowsOf(variants[1]), ...inContext];
}

function bigBodyRows(big: BigBodyResult[]): Row[] {
  const MiB = 1_048_576;
  type Bytes = { rss: number; heapUsed: number; arrayBuffers: number };
  const describe = (p: Bytes | undefined) =>
    p
      ? `RSS +${(p.rss / MiB).toFixed(1)}, heap +${(p.heapUsed / MiB).toFixed(1)}, buffers +${(p.arrayBuffers / MiB).toFixed(1)} MiB`
      : 'not run';
  const rows: Row[] = [];
  for (const { concurrency, peaks, live } of big) {
    const adapter = peaks['node-adapter'];
    const hand = peaks['node-hand'];
    if (concurrency === 1) {
      // Bytes alive while the handler runs, after a full GC: the framework's chunks are gone by then,
      // so every MiB of buffers is a copy of the body the receiver still holds.
      const copies = (live['node-adapter']?.arrayBuffers ?? Number.NaN) / MiB;
      const handCopies = (live['node-hand']?.arrayBuffers ?? Number.NaN) / MiB;
      rows.push({
        measure: '1 MiB body: copies of the body alive while the handler runs (node adapter)',
        value: Number.isNaN(copies) ? 'n/a' : copies.toFixed(2),
        target: '≤ 1 copy beyond the framework',
        met: Number.isNaN(copies) ? undefined : copies <= 1.25,
        context: `hand-written route: ${Number.isNaN(handCopies) ? NOT_MEASURED : handCopies.toFixed(2)}; heap alive: adapter +${((live['node-adapter']?.heapUsed ?? 0) / MiB).toFixed(1)} MiB, hand-written ${live['node-hand'] ? `+${(live['node-hand'].heapUsed / MiB).toFixed(1)} MiB` : NOT_MEASURED} (the parsed event); peaks: adapter ${describe(adapter)}; hand-written ${describe(hand)}`,
      });
      continue;
    }
    const total = (p: Bytes | undefined) => (p ? p.heapUsed + p.arrayBuffers : Number.NaN);
    // Extra bodies held per delivery beyond the hand-written route, from what is alive in the handlers
    // after a full GC (the peaks swing with the collector's timing, so they are context only). Both
    // routes hold the chunks of the deliveries still arriving, a concatenated copy and the decoded text.
    const extra = (total(live['node-adapter']) - total(live['node-hand'])) / (concurrency * MiB);
    rows.push({
      measure: `1 MiB bodies ×${concurrency} concurrent: extra body copies per delivery vs hand-written (alive in the handlers, heap + buffers)`,
      value: Number.isNaN(extra) ? 'n/a' : extra.toFixed(2),
      target: "≤ 0.5 (no copy beyond the hand-written route's one)",
      met: Number.isNaN(extra) ? undefined : extra <= 0.5,
      context: `alive: adapter ${describe(live['node-adapter'])}, hand-written ${describe(live['node-hand'])}; peaks: RSS ratio ${x((adapter?.rss ?? Number.NaN) / (hand?.rss ?? Number.NaN))}, adapter ${describe(adapter)}, hand-written ${describe(hand)}`,
    });
  }
  return rows;
}

function table(rows: readonly Row[]): string {
  const lines = ['| measure | value | target | met | context |', '|---|---|---|---|---|'];
  for (const row of rows) {
    const met = row.met === undefined ? '—' : row.met ? 'yes' : '**no**';
    lines.push(`| ${row.measure} | ${row.value} | ${row.target} | ${met} | ${row.context} |`);
  }
  return lines.join('\n');
}

/** wrk where it is installed (it leaves the receivers the pace); autocannon otherwise. */
function loadGenerator(): LoadGenerator {
  const wrk = wrkVersion();
  if (wrk) return new WrkLoad(wrk, HTTP_BODY_BYTES, deliveriesPerReceiver());
  log(
    'note: wrk is not installed (Debian: apt-get install wrk); autocannon may set the pace for fast receivers.',
  );
  return new AutocannonLoad(
    version('autocannon'),
    new DeliveryPool(HTTP_BODY_BYTES, deliveriesPerReceiver()),
  );
}

const buildState = build();
const environment = {
  node: process.version,
  cpu: `${cpus()[0]?.model ?? 'unknown'} × ${cpus().length}`,
  loadAtStart: loadavg()
    .map((n) => n.toFixed(2))
    .join(' '),
  packages: {
    'service-webhooks': `${JSON.parse(readFileSync(`${root}package.json`, 'utf8')).version} @ ${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', 'src', 'adapters') === '' ? '' : ' (working tree has changes)'}`,
    '@octokit/webhooks': version('@octokit/webhooks'),
    express: version('express'),
    fastify: version('fastify'),
    'lru-cache': version('lru-cache'),
    ioredis: version('ioredis'),
    autocannon: version('autocannon'),
  },
  resolved: import.meta.resolve('service-webhooks'),
};
log(
  `service-webhooks bench${QUICK ? ' (quick)' : ''}: Node ${environment.node}, ${environment.cpu}, load ${environment.loadAtStart}`,
);
log(`measuring ${environment.resolved} (${buildState})`);

log('\n1. core, per delivery (in process)');
// Imported only now: a static import would load the package before build() made it, so the core
// would be measured on the previous dist, or fail on a fresh clone that has none.
const { runCore } = await import('./core.js');
const core = await runCore(log);

log('\n1c. core as a server pays it: CPU time, fresh fixtures per segment, event-loop turns (own process)');
const costs = ownProcess<ServerCostRow[]>('./server-cost.ts', [], log);

log('\n1e. what `telemetry: openTelemetry()` adds to a delivery (own processes)');
// The smoke run: the SDK registered alone, the mode with more of our code on the path.
const telemetry = (QUICK ? (['sdk'] as const) : (['api', 'sdk'] as const)).map((mode) =>
  ownProcess<TelemetryCostRow>('./telemetry-cost.ts', [mode], log),
);

log('\n1f. what `schemas` adds to a delivery (own process)');
const schemaCosts = ownProcess<SchemaCostRow[]>('./schema-cost.ts', [], log);

log(
  '\n1g. what `ordering` adds to a delivery: MemoryStore CPU, RedisStore round trips and deliveries/s (own process)',
);
const orderingCost = ownProcess<OrderingCostResult>('./ordering-cost.ts', [], log);

log('\n1d. core as the shared harness measures it (../shared/bench/core-cost.mjs, own processes)');
const shared = sharedCoreCost(log);

log('\n3b. MemoryStore memory per id');
const perId = memoryPerId();
log(`  ${perId.store.toFixed(1)} B per id (bare lru-cache ${perId.lru.toFixed(1)} B)`);

// Before the load generator is pinned: the sample processes would inherit its one core.
log('\n1b. Lambda cold start: bundled handler, one fresh node process per sample');
const { runColdStart, describeSamples } = await import('./cold-start.js');
const cold = await runColdStart(log);

const pinned = pinLoadGenerator();
log(
  `\n2. HTTP end to end, ${formatBytes(HTTP_BODY_BYTES)} bodies, ${CONNECTIONS} connections${pinned ? ', server and load generator pinned to one core each' : ''}`,
);
const generator = loadGenerator();
log(`load generator: ${generator.name}`);
let node: HttpGroupResult;
let expressGroup: HttpGroupResult = {};
let fastifyGroup: HttpGroupResult = {};
let stores: HttpGroupResult;
try {
  log('node:http');
  node = await runGroup(
    QUICK ? ['node-adapter', 'node-hand'] : ['node-adapter', 'node-hand', 'node-octokit', 'node-hand-copy'],
    generator,
    log,
  );
  // The smoke run leaves the Express and Fastify groups out: the adapters' test tiers start them.
  if (!QUICK) {
    log('Express');
    expressGroup = await runGroup(['express-adapter', 'express-hand'], generator, log);
    log('Fastify');
    fastifyGroup = await runGroup(['fastify-adapter', 'fastify-hand'], generator, log);
  }
  log('\n3. stores (node adapter)');
  stores = await runGroup(
    QUICK ? ['node-redis'] : ['node-redis', 'node-adapter', 'node-redis-pipelined'],
    generator,
    log,
  );
} finally {
  generator.close();
}

log('\n5. inbox: acknowledge fast, process later');
const { runInboxBench, inboxRows } = await import('./inbox.js');
const inbox = await runInboxBench(log);

log('\n4. big bodies');
const big = await runBigBodies(QUICK ? ['node-adapter'] : ['node-adapter', 'node-hand'], log);

const rows = [
  ...sharedCoreCostRows(shared),
  ...serverCostRows(costs),
  ...telemetryCostRows(telemetry),
  ...schemaCostRows(schemaCosts),
  ...orderingCostRows(orderingCost),
  ...coreRows(core),
  ...coldStartRows(cold),
  ...httpRows(node, expressGroup, fastifyGroup),
  ...storeRows(stores, perId),
  ...bigBodyRows(big),
  ...inboxRows(inbox),
];
const minutes = ((Date.now() - started) / 60_000).toFixed(1);
const rendered = table(rows);
log(`\n${rendered}\n`);
// A failed request (non-2xx, a socket error, a delivery sent twice) means a variant did less work
// than its peers, so its figures may not be compared as they stand.
const failed = [
  ...[node, expressGroup, fastifyGroup, stores].flatMap((group) => Object.entries(group)),
  ...Object.entries(inbox.ack).flatMap(([handler, modes]) =>
    Object.entries(modes).map(([mode, figures]) => [`inbox ${handler} ${mode}`, figures] as const),
  ),
  ...inbox.endToEnd.map((run) => [`inbox end to end, ${run.engine}, ${run.workers} workers`, run] as const),
]
  .filter(([, result]) => result.failures > 0)
  .map(([variant, result]) => `${variant} ${result.failures.toLocaleString('en-US')}`);
const failures = failed.length === 0 ? 'none' : `**${failed.join(', ')}**`;
log(`failed HTTP requests: ${failures}`);
const met = rows.filter((row) => row.met === true).length;
const missed = rows.filter((row) => row.met === false).length;
log(`${met} targets met, ${missed} missed; ${minutes} min.`);

const markdown = `# Benchmark results

Generated by \`npm run bench\`${QUICK ? ' in quick mode (BENCH_QUICK=1: short runs, few rounds — a smoke test, not a result)' : ''} on ${new Date(started).toISOString()}, in ${minutes} min.
Every figure is a ratio measured in this one run on this one machine: variants run interleaved in
rotating order, and each ratio is the median over rounds of the ratio taken within a round, so load
from other processes on the machine cancels out as far as it can; latency percentiles, which live on
a few slow responses, are taken over every response of every round instead. Absolute numbers are
context only.

- Node ${environment.node}; CPU ${environment.cpu}; load average at start ${environment.loadAtStart}
- Packages: ${Object.entries(environment.packages)
  .map(([name, v]) => `${name} ${v}`)
  .join(', ')}
- Measured: the built package (\`${environment.resolved.replace(`file://${root}`, '')}\`, ${buildState})
- Core: ${core.sizes[0]?.rounds ?? 0} rounds per size, distinct event ids per delivery, pre-signed; HTTP: ${HTTP_ROUNDS} rounds, each a fresh server process per variant (plain Node.js, the bench's TypeScript compiled first), warmed for ${WARMUP} s, then ${HTTP_SECONDS} s of load per variant in ${HTTP_SLICES} slices alternating between the variants, ${CONNECTIONS} connections, ${formatBytes(HTTP_BODY_BYTES)} bodies, every request a distinct signed event, load from ${generator.name} (one thread), latency percentiles to the microsecond over every response of every round pooled${pinned ? ', server and load generator pinned to separate cores' : ''}

${rendered}

**${met} targets met, ${missed} missed.** Failed HTTP requests (non-2xx, socket errors, deliveries sent twice): ${failures}.

## What is compared

- **floor**: HMAC-SHA256 with a prepared node:crypto key object, constant-time compare against the
  decoded header, \`JSON.parse\`. **floor pipeline**: the floor plus lru-cache dedup and dispatch by type,
  as a user would hand-write it (no size limit, envelope or age check, lease, or deadlines).
- **core**: \`handle()\` with the default MemoryStore and one no-op handler (claim, run, complete).
- **As a server pays it** (section 1c, \`bench/server-cost.ts\`, in a process of its own with
  \`--expose-gc\`): every segment gets fresh fixtures and a fresh receiver, the cost is the process's
  CPU time (every thread, so the GC's helpers count), the loop yields to the event loop every 256
  deliveries as a server does between reads, and variants run A-B-B-A within a round. Section 1's
  tight wall-clock loop over one reused pool reads lower: warm caches, and garbage left for later.
  The events are a realistic \`user.created\` of about 300 bytes and 2 KiB that is mostly one string.
- **The shared harness** (section 1d, \`../shared/bench/core-cost.mjs\`, outside this repository) is
  the method the targets are judged by; both its figures head the table. It reads higher than section
  1c for the same build. What differs between the two, read from both: it yields to the event loop
  once per twentieth of a segment (every 500 deliveries at 300 B) rather than every 256; its segments
  are 10,000 deliveries at 300 B (section 1c: 20,000) and start from a collected heap; its floor keeps
  its lru-cache with a \`ttl\` (so it too pays for TTL bookkeeping); its events carry a \`pad\` field
  where section 1c's carry a \`bio\`; and it times \`handle.bind(webhooks)\` called straight from the
  loop. Which of these accounts for how much of the gap is not measured yet; the harness's figure is the
  one to hold the core to.
- **octokit**: \`@octokit/webhooks\` \`verifyAndReceive\` / \`createNodeMiddleware\`, the same bytes and the
  same \`sha256=\` scheme under GitHub's header names. octokit does not deduplicate, so the core is
  compared with what its users add for the same work: the hand-written lru-cache dedup (as in the floor
  pipeline) in the \`push\` handler, after verification. octokit alone is reported beside it. Over
  HTTP, the hand-written route's own lead over \`createNodeMiddleware\` is reported too: the node
  adapter's 1.15× target presumes octokit runs well below a minimal route (0.86× in the issue's
  reference figures), and a machine where it runs closer leaves less room than the target asks for.
- HTTP: the load generator runs on the other core. wrk (Debian's \`wrk\`, used when installed) sends
  each request from a file of pre-signed deliveries for about 25 µs of CPU, so it stays well short of
  its core and the receivers set the pace. autocannon, the fallback, spends about 65 µs per request
  and saturates its core when receivers are fast, squeezing the req/s ratios towards 1×. The
  \`load generator busy\` figure in every req/s row says how close it came; near 100%, read the
  server CPU per request rows instead.
- A/A control: the hand-written node:http route runs twice in the node group, as two variants. Their
  ratio can only differ from 1.00× by noise, so it shows how far this run's other ratios can be trusted.
- Latency: wrk reports its whole histogram per slice; a variant's p50 and p99 are over all its
  responses in all rounds. The tail on these shared VMs comes mostly from outside the receiver: an
  instrumented Fastify route answered every request within 12 ms of reading it, while wrk saw a
  p99.9 of 40-190 ms. The p99 row shows the per-round ratios' range so the swing can be judged.
- Lambda cold start: the same small function (one handler) on this library's \`service-webhooks/lambda\`
  (twice: with the default memory store, and with a user-written store and \`createWebhooks\` from
  \`service-webhooks/core\`, which leaves MemoryStore and lru-cache out)
  and on \`@octokit/webhooks\` (\`bench/cold-start/\`), each bundled by esbuild as a deployment is (node20,
  minified, ESM; the library from dist). Every sample is a fresh \`node\` process that reads a signed HTTP
  API event, then times importing the bundle (which creates the receiver) and answering that event,
  with the process's CPU over the same span; Node's own start-up, the same for both, is left out but
  reported as \`process\`. The three run in every order in turn, after warm-up rounds that are dropped. Sizes are
  the bundles gzipped at level 9; a package's share is how much smaller the gzipped bundle is without it.
- Big bodies: above a post-GC baseline, what is alive while a handler runs (after a full GC inside
  it; the median over deliveries), which the targets use, and in a separate run the high-water marks
  (sampled every 2 ms), which include garbage not yet collected and so swing with the collector's
  timing. Both routes hold the framework's chunks, one concatenated copy and the decoded text; the
  core itself copies no bytes (it hashes the caller's bytes and decodes them once for \`JSON.parse\`).

Reproduce: \`npm run bench\` (about 15 minutes; needs Redis on 127.0.0.1:6379 for the RedisStore row, and
wrk for req/s figures the receivers rather than the load generator decide: \`apt-get install wrk\`),
or \`BENCH_QUICK=1 npm run bench\` for a smoke run (about a minute, every section in one configuration; written to bench/.tmp/RESULTS-quick.md, never here).
`;
// A quick run is a smoke test, not a result: it must never replace the committed RESULTS.md.
const output = QUICK ? './.tmp/RESULTS-quick.md' : './RESULTS.md';
mkdirSync(new URL('./.tmp/', import.meta.url), { recursive: true });
writeFileSync(new URL(output, import.meta.url), markdown);
log(`wrote bench/${output.slice(2)}`);
// A refused or repeated delivery means a variant measured something other than the delivery path (a
// stale replay window once made a whole group answer 400): the figures are written so the failure can
// be read, but the run fails, so CI's smoke run and anyone scripting the bench notice.
if (failed.length > 0)
  log(`bench failed: HTTP requests failed (${failed.join(', ')}); the ratios above are not valid`);
process.exit(failed.length > 0 ? 1 : 0);
