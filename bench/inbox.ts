/**
 * The inbox section (issues 23 and 32): acknowledge fast, process later, on each engine (BullMQ on
 * Redis, pg-boss on PostgreSQL, SQS on the fauxqs emulator, RabbitMQ on the machine's broker, NATS
 * JetStream on its server), against handlers in the request, on the same framework (node adapter) and
 * the same idempotency store (RedisStore on the bench's Redis), so the engines differ in the queue alone.
 *
 * 1. Acknowledged deliveries/s and time to 200 of each engine's door (`createWebhooks({ inbox })`, no
 *    worker running, so the door is measured alone) and of the in-request receiver, each in its own
 *    receiver process, pinned to one core where `taskset` exists, under autocannon from this process.
 *    Twice: with a no-op handler, and with a handler that waits 100 ms (a downstream call), which the
 *    door never runs. The variants' order rotates from round to round; ratios are medians of
 *    per-round ratios, p99s are over every response of every round.
 * 2. End to end, per engine with one worker process (and BullMQ with 3): a backlog queued with no
 *    worker running, then drained (events/s from the workers' start to the last completion); then
 *    deliveries and workers at once (events/s from the first delivery to the last completion). No-op
 *    handlers; not pinned, so the workers share the machine's cores with the door, the queue's server
 *    and the load generator, as they would on one host.
 *
 * SQS runs on an emulator on this machine: its figures are the library's and the SDK's overhead over
 * HTTP, not what AWS answers in.
 *
 * Runs the built package (dist/) by name, as bench/run.ts does. Call {@link runInboxBench} then
 * {@link inboxRows}; `npx tsx bench/inbox.ts` runs this section alone (BENCH_QUICK=1: a few seconds).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import {
  ENGINES,
  type Engine,
  type EngineSetup,
  EngineSetups,
  openDoorInbox,
  REDIS_URL,
  startEngineWorker,
} from './inbox-engines.js';
import { LatencyHistogram } from './latency-histogram.js';
import { compiledScript } from './receiver-script.js';
import {
  bodyTemplate,
  bodyText,
  EVENT_TYPE,
  eventId,
  HTTP_BODY_BYTES,
  median,
  PATH,
  QUICK,
  runNonce,
  SECRET,
  sign,
} from './shared.js';

const CONNECTIONS = 50;
const ROUNDS = QUICK ? 1 : 3;
const SECONDS = QUICK ? 1 : 5;
const WARMUP_SECONDS = 1;
const SLOW_HANDLER_MS = 100;
const END_TO_END_EVENTS = QUICK ? 500 : 10_000;
const PIN = process.env.BENCH_PIN !== '0' && spawnSync('taskset', ['-V']).status === 0;

/** The receiver answering in the request, or the door of one engine. */
type Mode = 'in-request' | Engine;
const MODES: readonly Mode[] = ['in-request', ...ENGINES];
type Handler = 'noop' | 'slow';
/**
 * The acknowledgement runs: each handler against every engine's door and the in-request receiver; the
 * smoke run (BENCH_QUICK=1) the no-op handler against BullMQ's and RabbitMQ's doors and the in-request
 * receiver alone.
 */
const ACK_RUNS: { readonly handlers: readonly Handler[]; readonly modes: readonly Mode[] } = QUICK
  ? { handlers: ['noop'], modes: ['in-request', 'bullmq', 'rabbitmq'] }
  : { handlers: ['noop', 'slow'], modes: MODES };

/** The figures of one variant over all rounds. */
export interface AckFigures {
  /** Acknowledged (2xx) deliveries per second, per round. */
  readonly rps: number[];
  /** Receiver CPU per acknowledged delivery (µs), per round. */
  readonly cpu: number[];
  /** Time to 200 of every acknowledged delivery of every round. */
  readonly latency: LatencyHistogram;
  /** The load generator's (this process's) CPU over each run, as a share of one core. */
  readonly loadgen: number[];
  /** Non-2xx answers and socket errors over all rounds. */
  failures: number;
}

export interface InboxBenchResult {
  /** Every handler and mode; those the run left out (the smoke run leaves most) have no rounds. */
  readonly ack: Record<Handler, Record<Mode, AckFigures>>;
  /** Events/s from the first delivery to the last handler completion, by engine and worker processes. */
  readonly endToEnd: {
    readonly engine: Engine;
    readonly workers: number;
    /** Live: events/s from the first delivery to the last handler completion, workers running. */
    readonly eventsPerSecond: number;
    /** Live: the door's acknowledgements per second meanwhile. */
    readonly ackPerSecond: number;
    /** A backlog (queued with no worker running) run by the workers, per second. */
    readonly drainPerSecond: number;
    /** Deliveries not acknowledged, over both runs. */
    readonly failures: number;
  }[];
}

/** A row of bench/RESULTS.md, as bench/run.ts renders them. */
export interface InboxRow {
  readonly measure: string;
  readonly value: string;
  readonly target: string;
  readonly met: boolean | undefined;
  readonly context: string;
}

// ---------------------------------------------------------------------------------------------------
// The child processes: a receiver (door or in-request) or a worker, started with this file compiled.

type ChildMessage =
  | { readonly type: 'ready'; readonly port: number }
  | { readonly type: 'running' }
  | { readonly type: 'cpu'; readonly micros: number }
  | { readonly type: 'failed'; readonly message: string };

interface ChildOptions {
  readonly role: 'receiver' | 'worker';
  readonly handler: Handler;
  /** The engine's queue: a door's or a worker's; none for the in-request receiver. */
  readonly setup: EngineSetup | undefined;
  readonly prefix: string;
  readonly counterKey: string;
}

async function runChild(options: ChildOptions): Promise<void> {
  const { createWebhooks } = await import('service-webhooks');
  const { nodeHandler } = await import('service-webhooks/node');
  const { RedisStore } = await import('service-webhooks/redis');
  const send = (message: ChildMessage) => process.send?.(message);
  const storeClient = new Redis(REDIS_URL, { enableOfflineQueue: false, lazyConnect: true });
  await storeClient.connect();
  const counter = new Redis(REDIS_URL);
  const door =
    options.role === 'receiver' && options.setup !== undefined
      ? await openDoorInbox(options.setup)
      : undefined;
  const inbox = door?.inbox;
  const webhooks = createWebhooks({
    secret: SECRET,
    store: new RedisStore({ client: storeClient, prefix: options.prefix }),
    // One signed file of deliveries serves the whole section.
    dedupTtlSeconds: 3600,
    maxEventAgeSeconds: 3600,
    ...(inbox && { inbox }),
  });
  webhooks.on(EVENT_TYPE, async () => {
    if (options.handler === 'slow') await new Promise((resolve) => setTimeout(resolve, SLOW_HANDLER_MS));
    if (options.role === 'worker') await counter.incr(options.counterKey);
  });
  let cpuMark = process.cpuUsage();
  process.on('message', (message: { type: string }) => {
    if (message.type === 'mark') cpuMark = process.cpuUsage();
    if (message.type === 'cpu') {
      const used = process.cpuUsage(cpuMark);
      send({ type: 'cpu', micros: used.user + used.system });
    }
  });
  let close: () => Promise<void>;
  let port = 0;
  if (options.role === 'worker') {
    // Loaded and connected, but taking nothing until told: the drain is timed from the moment every
    // worker of a run is told to go, not from when the first one happened to be up.
    let worker: Promise<{ close: () => Promise<void> }> | undefined;
    process.on('message', (message: { type: string }) => {
      if (message.type !== 'go') return;
      worker = startEngineWorker(webhooks, options.setup!);
      worker.then(() => send({ type: 'running' }));
    });
    close = async () => {
      await (await worker)?.close();
    };
  } else {
    const server = createServer(nodeHandler(webhooks));
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    close = async () => {
      server.closeAllConnections();
      server.close();
      await door?.close();
    };
  }
  process.on('disconnect', () => {
    void close()
      .catch(() => {})
      .finally(() => {
        storeClient.disconnect();
        counter.disconnect();
        process.exit(0);
      });
  });
  send({ type: 'ready', port });
}

// ---------------------------------------------------------------------------------------------------
// The parent: compiling the child, starting and stopping it, loading it.

/**
 * This file compiled to one plain ESM file, packages (the library included) left as imports, so the
 * children run as an app's processes do: without tsx's loader thread (see bench/receiver-script.ts).
 */
function childScript(): Promise<string> {
  return compiledScript('inbox', fileURLToPath(import.meta.url));
}

interface Child {
  readonly port: number;
  readonly process: ChildProcess;
  mark(): void;
  /** A worker: start taking events; resolves once its engine's worker runs. */
  go(): Promise<void>;
  cpu(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Start a child: `pinned` to the receivers' core (as bench/http.ts pins its receivers), or free to run
 * on every core. Free is explicit: a child inherits this process's affinity, and bench/run.ts pins
 * itself (the load generator) to the other core before the HTTP sections.
 */
async function startChild(options: ChildOptions, pinned: boolean): Promise<Child> {
  const args = [await childScript(), 'inbox-child', JSON.stringify(options)];
  const cores = pinned ? '0' : `0-${cpus().length - 1}`;
  const child = spawn(
    PIN ? 'taskset' : process.execPath,
    PIN ? ['-c', cores, process.execPath, ...args] : args,
    {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) =>
      reject(new Error(`the ${options.role} exited (${code}) before it was ready.`)),
    );
    child.on('message', (message: ChildMessage) => {
      if (message.type === 'ready') resolve(message.port);
      if (message.type === 'failed') reject(new Error(message.message));
    });
  });
  child.removeAllListeners('exit');
  return {
    port,
    process: child,
    mark: () => child.send({ type: 'mark' }),
    go: () =>
      new Promise((resolve) => {
        const listener = (message: ChildMessage) => {
          if (message.type !== 'running') return;
          child.off('message', listener);
          resolve();
        };
        child.on('message', listener);
        child.send({ type: 'go' });
      }),
    cpu: () =>
      new Promise((resolve) => {
        const listener = (message: ChildMessage) => {
          if (message.type !== 'cpu') return;
          child.off('message', listener);
          resolve(message.micros);
        };
        child.on('message', listener);
        child.send({ type: 'cpu' });
      }),
    stop: () =>
      new Promise((resolve) => {
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        child.disconnect();
      }),
  };
}

/** Distinct signed deliveries, handed out one after another across every run of the section. */
class Deliveries {
  readonly #template = bodyTemplate(HTTP_BODY_BYTES);
  readonly #nonce = runNonce();
  #next = 0;

  take(): { body: string; headers: Record<string, string> } {
    const body = bodyText(this.#template, eventId(this.#nonce, this.#next++));
    return {
      body,
      headers: { 'content-type': 'application/json', 'x-service-signature': sign(body) },
    };
  }
}

interface LoadRun {
  readonly acknowledged: number;
  readonly seconds: number;
  /** This process's CPU over the run, as a share of one core: near 1, autocannon set the pace. */
  readonly busy: number;
  readonly failures: number;
  readonly latency: LatencyHistogram;
}

async function load(
  port: number,
  deliveries: Deliveries,
  options: { duration?: number; amount?: number },
): Promise<LoadRun> {
  const latency = new LatencyHistogram();
  let acknowledged = 0;
  const run = autocannon({
    url: `http://127.0.0.1:${port}${PATH}`,
    connections: CONNECTIONS,
    ...(options.amount === undefined
      ? { duration: options.duration ?? SECONDS }
      : { amount: options.amount }),
    timeout: 30,
    requests: [{ method: 'POST', setupRequest: (request) => ({ ...request, ...deliveries.take() }) }],
  });
  run.on('response', (_client, status, _bytes, ms) => {
    if (status < 200 || status >= 300) return;
    acknowledged++;
    latency.add(ms * 1000);
  });
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const result = await run;
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const busy = (cpu.user + cpu.system) / (seconds * 1e6);
  return { acknowledged, seconds, busy, failures: result.non2xx + result.errors + result.timeouts, latency };
}

/**
 * Send `amount` deliveries over `CONNECTIONS` keep-alive connections and answer when the last answer
 * came: the end-to-end runs time the whole flow to the millisecond, which autocannon's `amount` mode
 * (it ends on its next one-second tick) would round up.
 */
async function sendAll(
  port: number,
  deliveries: Deliveries,
  amount: number,
): Promise<{ acknowledged: number; failures: number; seconds: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  let sent = 0;
  let acknowledged = 0;
  let failures = 0;
  const post = () =>
    new Promise<void>((resolve) => {
      const { body, headers } = deliveries.take();
      const sending = request(
        {
          host: '127.0.0.1',
          port,
          path: PATH,
          method: 'POST',
          agent,
          headers: { ...headers, 'content-length': Buffer.byteLength(body) },
        },
        (response) => {
          response.resume();
          response.on('end', () => {
            if (response.statusCode === 200) acknowledged++;
            else failures++;
            resolve();
          });
        },
      );
      sending.on('error', () => {
        failures++;
        resolve();
      });
      sending.end(body);
    });
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (sent < amount) {
        sent++;
        await post();
      }
    }),
  );
  agent.destroy();
  return { acknowledged, failures, seconds: (performance.now() - started) / 1000 };
}

/** Delete what the section wrote to the bench's Redis (queues, store keys, counters). */
async function cleanup(redis: Redis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.unlink(...keys);
  } while (cursor !== '0');
}

/**
 * Run the inbox section; `log` gets one line per run.
 *
 * @example
 * ```ts
 * const { runInboxBench, inboxRows } = await import('./inbox.js');
 * rows.push(...inboxRows(await runInboxBench(log)));
 * ```
 */
export async function runInboxBench(log: (line: string) => void): Promise<InboxBenchResult> {
  const redis = new Redis(REDIS_URL);
  const nonce = runNonce();
  const run = `sw-bench-inbox-${nonce}`;
  const setups = new EngineSetups(nonce);
  const deliveries = new Deliveries();
  const empty = (): AckFigures => ({
    rps: [],
    cpu: [],
    latency: new LatencyHistogram(),
    loadgen: [],
    failures: 0,
  });
  const figuresByMode = () =>
    Object.fromEntries(MODES.map((mode) => [mode, empty()])) as Record<Mode, AckFigures>;
  const ack: InboxBenchResult['ack'] = { noop: figuresByMode(), slow: figuresByMode() };
  let queues = 0;
  const setupFor = (engine: Engine, label: string) => setups.prepare(engine, `${run}-${label}-${queues++}`);
  try {
    for (const handler of ACK_RUNS.handlers) {
      log(`  acknowledgements, ${handler === 'noop' ? 'no-op handler' : `handler of ${SLOW_HANDLER_MS} ms`}`);
      for (let round = 0; round < ROUNDS; round++) {
        // Each round starts with another variant, so none always runs first (or last) on a warm machine.
        const { modes } = ACK_RUNS;
        const order = modes.map((_, i) => modes[(i + round) % modes.length]!);
        for (const mode of order) {
          const options: ChildOptions = {
            role: 'receiver',
            handler,
            setup: mode === 'in-request' ? undefined : await setupFor(mode, handler),
            prefix: `${run}:store:`,
            counterKey: `${run}:count`,
          };
          const child = await startChild(options, true);
          try {
            await load(child.port, deliveries, { duration: WARMUP_SECONDS });
            child.mark();
            const measured = await load(child.port, deliveries, { duration: SECONDS });
            const cpu = await child.cpu();
            const figures = ack[handler][mode];
            const rps = measured.acknowledged / measured.seconds;
            figures.rps.push(rps);
            figures.cpu.push(cpu / Math.max(1, measured.acknowledged));
            figures.latency.merge(measured.latency);
            figures.loadgen.push(measured.busy);
            figures.failures += measured.failures;
            const [p50, p99] = measured.latency.quantiles(0.5, 0.99) as [number, number];
            log(
              `    round ${round + 1} ${mode}: ${Math.round(rps)} acknowledged/s, p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms, receiver CPU ${(cpu / Math.max(1, measured.acknowledged)).toFixed(1)} µs/delivery, load generator ${Math.round(measured.busy * 100)}%${measured.failures > 0 ? `, ${measured.failures} failed` : ''}`,
            );
          } finally {
            await child.stop();
          }
        }
      }
    }

    const endToEnd: InboxBenchResult['endToEnd'][number][] = [];
    // The smoke run (BENCH_QUICK=1): one, BullMQ with one worker.
    const runs: [Engine, number][] = QUICK
      ? [['bullmq', 1]]
      : [...ENGINES.map((engine): [Engine, number] => [engine, 1]), ['bullmq', 3]];
    for (const [engine, workers] of runs) {
      const setup = await setupFor(engine, `e2e-${workers}`);
      const options: ChildOptions = {
        role: 'receiver',
        handler: 'noop',
        setup,
        prefix: `${run}:store:`,
        counterKey: `${run}:e2e-${engine}-${workers}`,
      };
      const door = await startChild(options, false);
      const running: Child[] = [];
      const handled = async () => Number(await redis.get(options.counterKey));
      const until = async (count: number) => {
        const deadline = performance.now() + 300_000;
        while ((await handled()) < count) {
          if (performance.now() > deadline)
            throw new Error(`the ${engine} workers did not finish within 300 s.`);
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      };
      try {
        // Draining a backlog: the door fills the queue while no worker runs, then the workers run it,
        // timed from the moment they are all told to start (their engine's start included).
        const backlog = await sendAll(door.port, deliveries, END_TO_END_EVENTS);
        running.push(
          ...(await Promise.all(
            Array.from({ length: workers }, () => startChild({ ...options, role: 'worker' }, false)),
          )),
        );
        const drainStarted = performance.now();
        await Promise.all(running.map((worker) => worker.go()));
        await until(backlog.acknowledged);
        const drainSeconds = (performance.now() - drainStarted) / 1000;
        // Live: deliveries and workers at once, from the first delivery to the last completion.
        const before = await handled();
        const started = performance.now();
        const sent = await sendAll(door.port, deliveries, END_TO_END_EVENTS);
        await until(before + sent.acknowledged);
        const seconds = (performance.now() - started) / 1000;
        const result = {
          engine,
          workers,
          eventsPerSecond: sent.acknowledged / seconds,
          ackPerSecond: sent.acknowledged / sent.seconds,
          drainPerSecond: backlog.acknowledged / drainSeconds,
          failures: backlog.failures + sent.failures,
        };
        endToEnd.push(result);
        log(
          `  ${engine}, ${workers} worker${workers === 1 ? '' : 's'}: a backlog of ${backlog.acknowledged} drained at ${Math.round(result.drainPerSecond)} events/s; live, ${sent.acknowledged} events handled in ${seconds.toFixed(2)} s (${Math.round(result.eventsPerSecond)} events/s; acknowledged at ${Math.round(result.ackPerSecond)}/s)${result.failures > 0 ? `; ${result.failures} deliveries failed` : ''}`,
        );
      } finally {
        await Promise.all([door, ...running].map((child) => child.stop()));
      }
    }
    return { ack, endToEnd };
  } finally {
    await cleanup(redis, `*${run}*`).catch(() => {});
    redis.disconnect();
    await setups.close().catch((error: unknown) => log(`  (cleanup: ${String(error)})`));
  }
}

const x = (ratio: number) => (Number.isNaN(ratio) ? 'n/a' : `${ratio.toFixed(2)}×`);

function ratio(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  return n === 0 ? Number.NaN : median(a.slice(0, n).map((value, i) => value / b[i]!));
}

/**
 * The section's rows for bench/RESULTS.md.
 *
 * @example
 * ```ts
 * const rows = inboxRows(await runInboxBench(log));
 * ```
 */
export function inboxRows(result: InboxBenchResult): InboxRow[] {
  const rows: InboxRow[] = [];
  const rps = (figures: AckFigures) => `${Math.round(median(figures.rps)).toLocaleString('en-US')}/s`;
  const p = (figures: AckFigures, q: number) => figures.latency.quantiles(q)[0]!;
  for (const handler of ['noop', 'slow'] as const) {
    const inRequest = result.ack[handler]['in-request'];
    const what = handler === 'noop' ? 'no-op handler' : `${SLOW_HANDLER_MS} ms handler`;
    for (const engine of ENGINES) {
      const door = result.ack[handler][engine];
      // Not measured (the smoke run leaves it out): no row, rather than a verdict on no figures.
      if (door.rps.length === 0 || inRequest.rps.length === 0) continue;
      const rpsRatio = ratio(door.rps, inRequest.rps);
      const p99Ratio = p(door, 0.99) / p(inRequest, 0.99);
      rows.push({
        measure: `inbox door (${engine}) / handlers in the request (node adapter, RedisStore, ${what}): acknowledged deliveries/s`,
        value: x(rpsRatio),
        target:
          handler === 'slow'
            ? '> 1.00× (the door does not wait for handlers)'
            : '(reported: the door writes to the queue instead)',
        met: handler === 'slow' ? rpsRatio > 1 : undefined,
        context: `${engine} door ${rps(door)}, in-request ${rps(inRequest)}, ${CONNECTIONS} connections, load generator (autocannon) busy ${Math.round(median(door.loadgen) * 100)}% / ${Math.round(median(inRequest.loadgen) * 100)}% (near 100% it sets the pace: read the CPU ratio); receiver CPU per delivery ${x(ratio(door.cpu, inRequest.cpu))} (${median(door.cpu).toFixed(1)} vs ${median(inRequest.cpu).toFixed(1)} µs)${door.failures + inRequest.failures > 0 ? `; failed: ${engine} ${door.failures}, in-request ${inRequest.failures}` : ''}${engine === 'sqs' ? "; SQS on the fauxqs emulator: the library's and the SDK's overhead, not AWS" : ''}`,
      });
      rows.push({
        measure: `inbox door (${engine}) / handlers in the request (${what}): p99 time to 200`,
        value: x(p99Ratio),
        target: handler === 'slow' ? '< 1.00×' : '(reported)',
        met: handler === 'slow' ? p99Ratio < 1 : undefined,
        context: `${engine} p99 ${p(door, 0.99).toFixed(2)} ms (p50 ${p(door, 0.5).toFixed(2)} ms), in-request p99 ${p(inRequest, 0.99).toFixed(2)} ms (p50 ${p(inRequest, 0.5).toFixed(2)} ms)`,
      });
    }
    const bullmq = result.ack[handler].bullmq;
    for (const engine of ENGINES.filter((name) => name !== 'bullmq')) {
      const door = result.ack[handler][engine];
      if (door.rps.length === 0 || bullmq.rps.length === 0) continue;
      rows.push({
        measure: `inbox door, ${engine} / BullMQ (${what}): acknowledged deliveries/s; p99 time to 200`,
        value: `${x(ratio(door.rps, bullmq.rps))}; ${x(p(door, 0.99) / p(bullmq, 0.99))}`,
        target: '(reported: the same door, another queue)',
        met: undefined,
        context: `${engine} ${rps(door)}, p99 ${p(door, 0.99).toFixed(2)} ms; BullMQ ${rps(bullmq)}, p99 ${p(bullmq, 0.99).toFixed(2)} ms`,
      });
    }
  }
  const events = END_TO_END_EVENTS.toLocaleString('en-US');
  for (const entry of result.endToEnd) {
    const workers = `${entry.workers} worker process${entry.workers === 1 ? '' : 'es'} (concurrency 50 each)`;
    rows.push({
      measure: `inbox end to end (${entry.engine}), ${workers}: events/s from first delivery to last handler completion; backlog drain`,
      value: `${Math.round(entry.eventsPerSecond).toLocaleString('en-US')}; ${Math.round(entry.drainPerSecond).toLocaleString('en-US')} events/s`,
      target: '(reported)',
      met: undefined,
      context: `${events} events live, the door acknowledging ${Math.round(entry.ackPerSecond).toLocaleString('en-US')}/s meanwhile; ${events} queued with no worker running, then drained${entry.failures > 0 ? `; ${entry.failures} deliveries failed` : ''}; door, workers, the queue's server and the load generator share the machine, unpinned`,
    });
  }
  const one = result.endToEnd.find((entry) => entry.engine === 'bullmq' && entry.workers === 1);
  const three = result.endToEnd.find((entry) => entry.engine === 'bullmq' && entry.workers === 3);
  if (one && three) {
    rows.push({
      measure: 'inbox (BullMQ): 3 workers / 1 worker, events/s (end to end; backlog drain)',
      value: `${x(three.eventsPerSecond / one.eventsPerSecond)}; ${x(three.drainPerSecond / one.drainPerSecond)}`,
      target: '(reported: bounded by the cores the door, Redis and the load generator leave)',
      met: undefined,
      context: `end to end ${Math.round(three.eventsPerSecond)} vs ${Math.round(one.eventsPerSecond)} events/s; drain ${Math.round(three.drainPerSecond)} vs ${Math.round(one.drainPerSecond)} events/s`,
    });
  }
  return rows;
}

// As a child: `inbox.mjs inbox-child <options>`. Run directly: the section alone.
if (process.argv[2] === 'inbox-child') {
  runChild(JSON.parse(process.argv[3]!) as ChildOptions).catch((error: unknown) => {
    process.send?.({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
    process.exit(1);
  });
} else if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const log = (line: string) => process.stdout.write(`${line}\n`);
  log(`inbox section${QUICK ? ' (quick)' : ''}: measuring the built package (run npm run build first)`);
  const rows = inboxRows(await runInboxBench(log));
  log('\n| measure | value | target | met | context |\n|---|---|---|---|---|');
  for (const row of rows) {
    log(
      `| ${row.measure} | ${row.value} | ${row.target} | ${row.met === undefined ? '—' : row.met ? 'yes' : '**no**'} | ${row.context} |`,
    );
  }
  process.exit(0);
}
