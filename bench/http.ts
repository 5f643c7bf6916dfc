/**
 * Sections 2 to 4 over loopback HTTP: the receiver runs in a forked process (server.ts), the load
 * generator (wrk where installed, see wrk.ts, else autocannon in this process) on the other core, each
 * pinned to its own core where `taskset` exists. Every request carries a distinct event id and a valid
 * signature (pre-signed; autocannon signs on the fly only if a run outgrows its pool).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import autocannon from 'autocannon';
import { LatencyHistogram } from './latency-histogram.js';
import { receiverScript } from './receiver-script.js';
import type { MemoryPeak, ParentMessage, ServerMessage, VariantName } from './server.js';
import {
  type BodyTemplate,
  bodyTemplate,
  bodyText,
  eventId,
  HTTP_BODY_BYTES,
  median,
  PATH,
  QUICK,
  rotated,
  runNonce,
  sign,
} from './shared.js';

const PIN = process.env.BENCH_PIN !== '0' && spawnSync('taskset', ['-V']).status === 0;
const SERVER_CPU = '0';
const LOAD_CPU = '1';

/** Pin this process (the load generator) to its own core, once. */
export function pinLoadGenerator(): boolean {
  if (!PIN) return false;
  execFileSync('taskset', ['-a', '-p', '-c', LOAD_CPU, String(process.pid)], { stdio: 'ignore' });
  return true;
}

export interface MemoryReport {
  readonly peak: MemoryPeak;
  readonly baseline: MemoryPeak;
  readonly live: MemoryPeak | undefined;
  readonly cpuMicros: number;
}

export interface RunningServer {
  readonly port: number;
  report(): Promise<MemoryReport>;
  /** Take the memory baseline (after the garbage of earlier deliveries is gone) and start sampling. */
  sample(): Promise<void>;
  /** Start counting the server's CPU time (reported by `report`). */
  mark(): void;
  stop(): Promise<void>;
}

/**
 * Start a receiver process, retrying a few times: the working tree is shared, and another `npm run
 * build` empties dist/ for a moment while it rebuilds.
 */
export async function startServer(
  variant: VariantName,
  options: { exposeGc?: boolean; measureLive?: boolean; profileFolder?: string } = {},
): Promise<RunningServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startServerOnce(
        variant,
        options.exposeGc === true,
        options.measureLive === true,
        options.profileFolder ?? variant,
      );
    } catch (error) {
      if (attempt === 4) throw error;
      await new Promise((resolve) => setTimeout(resolve, 3000));
    }
  }
}

async function startServerOnce(
  variant: VariantName,
  exposeGc: boolean,
  measureLive: boolean,
  profileFolder: string,
): Promise<RunningServer> {
  // BENCH_PROFILE=<dir> writes a CPU profile of every receiver process (node --cpu-prof) into
  // <dir>/<profileFolder>, the folders bench/profile-summary.ts compares.
  const profile = process.env.BENCH_PROFILE
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}/${profileFolder}`]
    : [];
  // BENCH_NODE_ARGS adds flags to every receiver process, e.g. `--trace-gc` (NODE_OPTIONS refuses it).
  const nodeArgs = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const args = [
    ...profile,
    ...nodeArgs,
    ...(exposeGc ? ['--expose-gc'] : []),
    await receiverScript(),
    variant,
  ];
  const child = spawn(
    PIN ? 'taskset' : process.execPath,
    PIN ? ['-c', SERVER_CPU, process.execPath, ...args] : args,
    {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: {
        ...process.env,
        BENCH_LIVE: measureLive ? '1' : '0',
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) =>
      reject(new Error(`The ${variant} server exited (${code}) before listening.`)),
    );
    child.on('message', (message: ServerMessage) => {
      if (message.type === 'ready') resolve(message.port);
      if (message.type === 'failed') reject(new Error(`The ${variant} server failed: ${message.message}`));
    });
  });
  child.removeAllListeners('exit');
  const post = (message: ParentMessage) => child.send(message);
  /** Send `request` and wait for the receiver's answer of type `type`. */
  const ask = <T extends ServerMessage['type']>(request: ParentMessage, type: T) =>
    new Promise<Extract<ServerMessage, { type: T }>>((resolve) => {
      const listener = (message: ServerMessage) => {
        if (message.type !== type) return;
        child.off('message', listener);
        resolve(message as Extract<ServerMessage, { type: T }>);
      };
      child.on('message', listener);
      post(request);
    });
  return {
    port,
    sample: async () => {
      await ask({ type: 'sample' }, 'sampled');
    },
    mark: () => post({ type: 'mark' }),
    report: async () => {
      const { peak, baseline, live, cpuMicros } = await ask({ type: 'report' }, 'peak');
      return { peak, baseline, live, cpuMicros };
    },
    stop: () =>
      new Promise((resolve) => {
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        child.disconnect();
      }),
  };
}

/** Pre-signed deliveries of one size; `take()` hands out the next distinct one. */
export class DeliveryPool {
  readonly #template: BodyTemplate;
  readonly #nonce = runNonce();
  readonly #signatures: string[] = [];
  #next = 0;

  constructor(size: number, count: number) {
    this.#template = bodyTemplate(size);
    for (let n = 0; n < count; n++) this.#signatures.push(sign(this.#body(n)));
  }

  #body(n: number): string {
    return bodyText(this.#template, eventId(this.#nonce, n));
  }

  /**
   * The next delivery `take()` hands out; settable, to start a fresh receiver process at 0 or go on
   * where a receiver left off.
   */
  get position(): number {
    return this.#next;
  }

  set position(n: number) {
    this.#next = n;
  }

  take(): { body: string; headers: Record<string, string> } {
    const n = this.#next++;
    const body = this.#body(n);
    // Beyond the pool a delivery is signed here: it costs the load generator, whose busy figure shows it.
    const signature = this.#signatures[n] ?? sign(body);
    return {
      body,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'Service-Webhooks/1.0',
        'x-service-signature': signature,
        // The same bytes and scheme under GitHub's names, for @octokit/webhooks.
        'x-hub-signature-256': signature,
        'x-github-event': 'push',
        'x-github-delivery': eventId(this.#nonce, n),
      },
    };
  }
}

export interface LoadResult {
  /** Responses received. */
  readonly total: number;
  /** How long the load ran, measured. */
  readonly seconds: number;
  /**
   * Response times to the microsecond: of the 2xx answers under autocannon, of every answer under wrk
   * (failed requests are counted apart, and any failure is printed with the results).
   */
  readonly latency: LatencyHistogram;
  readonly non2xx: number;
  readonly errors: number;
  /** The load generator's own CPU time over the run (µs): how close it came to setting the pace. */
  readonly loadCpuMicros: number;
}

/** What drives a receiver process in the HTTP groups: wrk (wrk.ts) or autocannon. */
export interface LoadGenerator {
  /** Name and version, printed with the results. */
  readonly name: string;
  /** Load `server` for `seconds` with distinct deliveries it has never been sent. */
  run(server: RunningServer, connections: number, seconds: number): Promise<LoadResult>;
  close(): void;
}

export async function load(
  port: number,
  pool: DeliveryPool,
  options: { connections: number; duration?: number; amount?: number },
): Promise<LoadResult> {
  // autocannon's own percentiles come from a histogram of whole milliseconds, too coarse for a 1.1×
  // target at a p99 of a few milliseconds (7 against 8 ms is already 1.14×); its events give µs.
  const latency = new LatencyHistogram();
  const run = autocannon({
    url: `http://127.0.0.1:${port}${PATH}`,
    connections: options.connections,
    ...(options.amount === undefined ? { duration: options.duration ?? 5 } : { amount: options.amount }),
    timeout: 30,
    requests: [{ method: 'POST', setupRequest: (request) => ({ ...request, ...pool.take() }) }],
  });
  // As autocannon's own latency figures, only answered 2xx requests count.
  run.on('response', (_client, status, _bytes, ms) => {
    if (status >= 200 && status < 300) latency.add(ms * 1000);
  });
  const cpuBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  const result = await run;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = process.cpuUsage(cpuBefore);
  return {
    total: result.requests.total,
    seconds,
    latency,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    loadCpuMicros: cpu.user + cpu.system,
  };
}

/**
 * autocannon in this process, the fallback where wrk is not installed. It costs about 65 µs of CPU per
 * request, so fast receivers saturate it; the req/s rows then say so through the load generator's load.
 */
export class AutocannonLoad implements LoadGenerator {
  readonly name: string;
  readonly #pool: DeliveryPool;
  /** The next unsent delivery per receiver process: none is ever sent the same delivery twice. */
  readonly #next = new WeakMap<RunningServer, number>();

  constructor(version: string, pool: DeliveryPool) {
    this.name = `autocannon ${version}`;
    this.#pool = pool;
  }

  async run(server: RunningServer, connections: number, seconds: number): Promise<LoadResult> {
    this.#pool.position = this.#next.get(server) ?? 0;
    const result = await load(server.port, this.#pool, { connections, duration: seconds });
    this.#next.set(server, this.#pool.position);
    return result;
  }

  close(): void {}
}

export interface HttpVariantResult {
  readonly rps: number[];
  /** Every 2xx response time of every round, pooled: the p50/p99 rows' source (see latencyRatio). */
  readonly latency: LatencyHistogram;
  /** Each round's p99 alone (ms), printed beside the pooled ratio to show how far tails swing. */
  readonly p99: number[];
  /** Each slice's p99 alone (ms), in the order the slices ran: slice i of two variants ran seconds apart. */
  readonly sliceP99: number[];
  /** The server's own CPU time per request answered (µs): steadier than req/s on a shared machine. */
  readonly cpu: number[];
  /**
   * How busy the load generator's core was while it loaded this variant (CPU time over load time).
   * Near 1, the load generator rather than the receiver sets the pace: req/s ratios are squeezed
   * towards 1×, and the server CPU per request is the figure that still tells the variants apart.
   */
  readonly loadgen: number[];
  failures: number;
}

export type HttpGroupResult = Partial<Record<VariantName, HttpVariantResult>>;

/**
 * Seconds of load per variant per round, cut into slices that alternate between the variants. Whole
 * seconds throughout: wrk takes no fractions. Slices of 2 s rather than 1 s: each slice is a new wrk
 * process whose 50 connections are new, and the first request on each waits behind the server
 * accepting all of them. In a 1-second slice those 50 are 1% of the requests, exactly the p99; over
 * 2 s they are about 0.4%. Measured on one warmed Fastify receiver: five 1-s runs pooled gave a p99
 * of 36-55 ms, one 5-s run 8-36 ms, at the same p50.
 *
 * Seven rounds, each with fresh server processes: an A/A run (the hand-written node:http route
 * against a second copy of itself) read 1.04× req/s over five rounds, with single rounds apart by up
 * to 15%, which is as wide as the margins the targets leave.
 */
export const HTTP_SECONDS = QUICK ? 2 : 6;
export const HTTP_SLICES = QUICK ? 2 : 3;
/**
 * Seconds of unmeasured load each fresh receiver gets before its round's slices: its first seconds
 * under load carry its JIT tiering. With 2 s, the next second of load had a p99 of 47-82 ms in a lone
 * node adapter (5.5 ms later on); with 6 s, 7-8 ms. Each round's first slice still carries most of
 * the tail spikes (see sliceLatencyRatio), in every variant: not yet explained.
 */
export const WARMUP = QUICK ? 1 : 4;
export const HTTP_ROUNDS = QUICK ? 1 : 7;
export const CONNECTIONS = 50;

/**
 * Run a group of variants for several rounds. Each round starts a fresh server process per variant,
 * warms each up, then alternates short slices of load between them in rotating order, so that two
 * variants compared are measured within seconds of each other: on these shared machines the load from
 * elsewhere drifts over tens of seconds, and back-to-back whole runs picked that drift up as a
 * difference between variants. A round's figure per variant is its requests over its seconds (req/s),
 * its CPU over its requests; its response times join the variant's histogram over all rounds.
 */
export async function runGroup(
  variants: readonly VariantName[],
  generator: LoadGenerator,
  log: (line: string) => void,
): Promise<HttpGroupResult> {
  const results: HttpGroupResult = {};
  const slice = HTTP_SECONDS / HTTP_SLICES;
  for (let round = 0; round < HTTP_ROUNDS; round++) {
    const servers = new Map<VariantName, RunningServer>();
    try {
      for (const variant of variants) {
        try {
          servers.set(variant, await startServer(variant));
        } catch (error) {
          // The smoke run is there to notice a receiver that no longer starts: it stops here.
          if (QUICK) throw error;
          log(`  ${variant}: skipped (${error instanceof Error ? error.message : String(error)})`);
        }
      }
      for (const [, server] of servers) await generator.run(server, CONNECTIONS, WARMUP);
      const totals = new Map<
        VariantName,
        {
          requests: number;
          seconds: number;
          cpu: number;
          loadgen: number;
          latency: LatencyHistogram;
          failures: number;
          sliceP99: number[];
        }
      >();
      for (let index = 0; index < HTTP_SLICES; index++) {
        for (const variant of rotated([...servers.keys()], round * HTTP_SLICES + index)) {
          const server = servers.get(variant)!;
          server.mark();
          const run = await generator.run(server, CONNECTIONS, slice);
          const { cpuMicros } = await server.report();
          const total = totals.get(variant) ?? {
            requests: 0,
            seconds: 0,
            cpu: 0,
            loadgen: 0,
            latency: new LatencyHistogram(),
            failures: 0,
            sliceP99: [],
          };
          totals.set(variant, total);
          total.sliceP99.push(run.latency.quantiles(0.99)[0]!);
          total.requests += run.total;
          total.seconds += run.seconds;
          total.cpu += cpuMicros;
          total.loadgen += run.loadCpuMicros;
          total.latency.merge(run.latency);
          total.failures += run.non2xx + run.errors;
        }
      }
      for (const [variant, total] of totals) {
        const entry = results[variant] ?? {
          rps: [],
          latency: new LatencyHistogram(),
          p99: [],
          sliceP99: [],
          cpu: [],
          loadgen: [],
          failures: 0,
        };
        results[variant] = entry;
        const rps = total.requests / total.seconds;
        const cpu = total.cpu / Math.max(1, total.requests);
        entry.rps.push(rps);
        const [p50, p99] = total.latency.quantiles(0.5, 0.99) as [number, number];
        entry.latency.merge(total.latency);
        entry.p99.push(p99);
        entry.sliceP99.push(...total.sliceP99);
        const busy = total.loadgen / (total.seconds * 1e6);
        entry.cpu.push(cpu);
        entry.loadgen.push(busy);
        entry.failures += total.failures;
        log(
          `  round ${round + 1} ${variant}: ${Math.round(rps)} req/s, p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms, server CPU ${cpu.toFixed(1)} µs/req, load generator ${Math.round(busy * 100)}%${total.failures > 0 ? `, ${total.failures} failed` : ''}`,
        );
      }
    } finally {
      for (const [, server] of servers) await server.stop();
    }
  }
  return results;
}

/** Median over rounds of a/b, each ratio taken within one round. */
export function roundRatio(
  group: HttpGroupResult,
  a: VariantName,
  b: VariantName,
  metric: 'rps' | 'cpu',
): number {
  const as = group[a]?.[metric];
  const bs = group[b]?.[metric];
  if (!as || !bs) return Number.NaN;
  const n = Math.min(as.length, bs.length);
  return median(as.slice(0, n).map((value, i) => value / bs[i]!));
}

/**
 * The latency quantile `q` of `a` over that of `b`, each over every response of every round. Unlike
 * req/s, a tail is not taken per round: a p99 lives on the few slowest responses, which on these VMs
 * come mostly from stalls outside the receiver (wrk against a bare node:http "hello" server showed a p99
 * from 3 to 100 ms over 5-second runs, with p50 at 1.4-2.4 ms), so one round holds too few of them for
 * a stable ratio. The slices
 * still alternate, so both variants met the same stalls.
 */
export function latencyRatio(group: HttpGroupResult, a: VariantName, b: VariantName, q: number): number {
  const as = group[a]?.latency;
  const bs = group[b]?.latency;
  if (!as || !bs) return Number.NaN;
  return as.quantiles(q)[0]! / bs.quantiles(q)[0]!;
}

/**
 * The median over slices of a's p99 over b's in the same slice position, which ran seconds apart: a
 * steady tail, which one stalled slice cannot move. Printed beside the pooled ratio, which it does not
 * replace: the target is on every response, and a receiver with rare long pauses of its own would pass
 * here. Over three 7-round runs of the node group, 19 of the 23 slices with a p99 above twice their
 * variant's median slice were the first of their round (one in three is).
 */
export function sliceLatencyRatio(group: HttpGroupResult, a: VariantName, b: VariantName): number {
  const as = group[a]?.sliceP99;
  const bs = group[b]?.sliceP99;
  if (!as || !bs) return Number.NaN;
  return median(as.slice(0, bs.length).map((value, i) => value / bs[i]!));
}

/** Distinct deliveries one receiver process may need over a round: its load time at up to 50k req/s. */
export function deliveriesPerReceiver(): number {
  return (WARMUP + HTTP_SECONDS) * 50_000;
}

export { HTTP_BODY_BYTES };

type Bytes = { rss: number; heapUsed: number; arrayBuffers: number };

export interface BigBodyResult {
  readonly concurrency: number;
  readonly deliveries: number;
  /** Peak minus the post-GC baseline, per variant, in bytes (sampled every 2 ms). */
  readonly peaks: Partial<Record<VariantName, Bytes>>;
  /** The median alive while a handler ran, after a full GC, above the baseline. */
  readonly live: Partial<Record<VariantName, Bytes>>;
}

const minus = (a: MemoryPeak, b: MemoryPeak): Bytes => ({
  rss: a.rss - b.rss,
  heapUsed: a.heapUsed - b.heapUsed,
  arrayBuffers: a.arrayBuffers - b.arrayBuffers,
});

const mib = (bytes: number) => (bytes / 1_048_576).toFixed(1);

/**
 * Section 4: memory while receiving 1 MiB bodies, one at a time and 50 at once. Two measures per
 * variant: what is alive while a handler runs, measured after a full GC inside it (the bytes deliveries
 * really hold, which the targets use), and the high-water marks, sampled every 2 ms. At 50 at once the
 * marks come from a second server process without the GC, which would serialise the handlers; they
 * then include garbage not yet collected, so they swing with the collector's timing.
 */
export async function runBigBodies(
  variants: readonly VariantName[],
  log: (line: string) => void,
): Promise<BigBodyResult[]> {
  const size = 1_048_576;
  // The smoke run (BENCH_QUICK=1): one at a time only.
  const scenarios = QUICK
    ? [{ concurrency: 1, deliveries: 5 }]
    : [
        { concurrency: 1, deliveries: 20 },
        { concurrency: 50, deliveries: 150 },
      ];
  const pool = new DeliveryPool(size, QUICK ? 10 : 200);
  const results: BigBodyResult[] = [];
  for (const { concurrency, deliveries } of scenarios) {
    const peaks: BigBodyResult['peaks'] = {};
    const live: BigBodyResult['live'] = {};
    for (const variant of variants) {
      // One at a time, the GC in the handler barely moves the peaks, so one run gives both measures.
      for (const measureLive of concurrency === 1 ? [true] : [false, true]) {
        // A folder of its own: 1 MiB bodies and a gc() per delivery would swamp the variant's 2 KiB profile.
        const profileFolder = `${variant}-1MiB`;
        const server = await startServer(variant, { exposeGc: true, measureLive, profileFolder });
        try {
          pool.position = 0;
          await load(server.port, pool, { connections: Math.min(concurrency, 5), amount: 5 });
          await server.sample();
          const run = await load(server.port, pool, { connections: concurrency, amount: deliveries });
          const report = await server.report();
          if (run.non2xx + run.errors > 0) {
            log(`  ${variant}: ${run.non2xx} non-2xx, ${run.errors} errors`);
            // The smoke run is there to notice a receiver that refuses deliveries: it stops here.
            if (QUICK) throw new Error(`The ${variant} receiver refused 1 MiB deliveries.`);
          }
          if (measureLive && report.live) live[variant] = minus(report.live, report.baseline);
          if (!measureLive || concurrency === 1) peaks[variant] = minus(report.peak, report.baseline);
        } finally {
          await server.stop();
        }
      }
      const peak = peaks[variant];
      const held = live[variant];
      log(
        `  1 MiB x${concurrency} ${variant}: peak${peak ? ` +${mib(peak.rss)} MiB RSS, +${mib(peak.heapUsed)} MiB heap, +${mib(peak.arrayBuffers)} MiB buffers` : ' n/a'}; alive in the handler${held ? `: +${mib(held.heapUsed)} MiB heap, +${mib(held.arrayBuffers)} MiB buffers` : ' n/a'}`,
      );
    }
    results.push({ concurrency, deliveries, peaks, live });
  }
  return results;
}
