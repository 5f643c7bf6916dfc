/**
 * The inbox section (issue 23): acknowledge fast, process later, against handlers in the request, on
 * the same framework (node adapter) and the same store (RedisStore on the bench's Redis).
 *
 * 1. Acknowledged deliveries/s and time to 200 of the door (`createWebhooks({ inbox })`, no worker
 *    running, so the door is measured alone) against the in-request receiver, each in its own receiver
 *    process, pinned to one core where `taskset` exists, under autocannon from this process. Twice: with
 *    a no-op handler, and with a handler that waits 100 ms (a downstream call), which the door never
 *    runs. Variants alternate within each round (A B, then B A); ratios are medians of per-round ratios,
 *    p99s are over every response of every round.
 * 2. End to end: events/s from the first delivery to the last handler completion, with the door and 1,
 *    then 3, worker processes (no-op handlers; not pinned, so the workers share the machine's cores
 *    with the door, Redis and the load generator, as they would on one host).
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
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
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

const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const CONNECTIONS = 50;
const ROUNDS = QUICK ? 1 : 3;
const SECONDS = QUICK ? 1 : 5;
const WARMUP_SECONDS = 1;
const SLOW_HANDLER_MS = 100;
const END_TO_END_EVENTS = QUICK ? 1_000 : 20_000;
const PIN = process.env.BENCH_PIN !== '0' && spawnSync('taskset', ['-V']).status === 0;

type Mode = 'in-request' | 'inbox';
type Handler = 'noop' | 'slow';

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
  readonly ack: Record<Handler, Record<Mode, AckFigures>>;
  /** Events/s from the first delivery to the last handler completion, by worker processes. */
  readonly endToEnd: {
    readonly workers: number;
    /** Live: events/s from the first delivery to the last handler completion, workers running. */
    readonly eventsPerSecond: number;
    /** Live: the door's acknowledgements per second meanwhile. */
    readonly ackPerSecond: number;
    /** A backlog (queued while the queue was paused) run by the workers, per second. */
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
  | { readonly type: 'cpu'; readonly micros: number }
  | { readonly type: 'failed'; readonly message: string };

interface ChildOptions {
  readonly role: 'receiver' | 'worker';
  readonly mode: Mode;
  readonly handler: Handler;
  readonly queueName: string;
  readonly prefix: string;
  readonly counterKey: string;
}

async function runChild(options: ChildOptions): Promise<void> {
  const { createWebhooks } = await import('service-webhooks');
  const { nodeHandler } = await import('service-webhooks/node');
  const { RedisStore } = await import('service-webhooks/redis');
  const { bullmqInbox, startInboxWorker } = await import('service-webhooks/bullmq');
  const send = (message: ChildMessage) => process.send?.(message);
  const storeClient = new Redis(REDIS_URL, { enableOfflineQueue: false, lazyConnect: true });
  await storeClient.connect();
  const counter = new Redis(REDIS_URL);
  const inbox =
    options.role === 'receiver' && options.mode === 'inbox'
      ? bullmqInbox({ connection: REDIS_URL, queueName: options.queueName })
      : undefined;
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
    const worker = startInboxWorker(webhooks, {
      connection: REDIS_URL,
      queueName: options.queueName,
      concurrency: 50,
      monitor: false,
      keepCompleted: 0,
    });
    await worker.waitUntilReady();
    close = () => worker.close();
  } else {
    const server = createServer(nodeHandler(webhooks));
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    close = async () => {
      server.closeAllConnections();
      server.close();
      await inbox?.close();
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
  const run = `sw-bench-inbox-${runNonce()}`;
  const deliveries = new Deliveries();
  const empty = (): AckFigures => ({
    rps: [],
    cpu: [],
    latency: new LatencyHistogram(),
    loadgen: [],
    failures: 0,
  });
  const ack: InboxBenchResult['ack'] = {
    noop: { 'in-request': empty(), inbox: empty() },
    slow: { 'in-request': empty(), inbox: empty() },
  };
  try {
    for (const handler of ['noop', 'slow'] as const) {
      log(`  acknowledgements, ${handler === 'noop' ? 'no-op handler' : `handler of ${SLOW_HANDLER_MS} ms`}`);
      for (let round = 0; round < ROUNDS; round++) {
        const order: Mode[] = round % 2 === 0 ? ['inbox', 'in-request'] : ['in-request', 'inbox'];
        for (const mode of order) {
          const options: ChildOptions = {
            role: 'receiver',
            mode,
            handler,
            queueName: `${run}-${handler}-${round}`,
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
    for (const workers of [1, 3]) {
      const options: ChildOptions = {
        role: 'receiver',
        mode: 'inbox',
        handler: 'noop',
        queueName: `${run}-e2e-${workers}`,
        prefix: `${run}:store:`,
        counterKey: `${run}:e2e-${workers}`,
      };
      const door = await startChild(options, false);
      const running = await Promise.all(
        Array.from({ length: workers }, () => startChild({ ...options, role: 'worker' }, false)),
      );
      const queue = new Queue(options.queueName, { connection: redis });
      const handled = async () => Number(await redis.get(options.counterKey));
      const until = async (count: number) => {
        const deadline = performance.now() + 120_000;
        while ((await handled()) < count) {
          if (performance.now() > deadline) throw new Error('the workers did not finish within 120 s.');
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      };
      try {
        // Draining a backlog: the door fills the paused queue, then the workers run it.
        await queue.pause();
        const backlog = await sendAll(door.port, deliveries, END_TO_END_EVENTS);
        const drainStarted = performance.now();
        await queue.resume();
        await until(backlog.acknowledged);
        const drainSeconds = (performance.now() - drainStarted) / 1000;
        // Live: deliveries and workers at once, from the first delivery to the last completion.
        const before = await handled();
        const started = performance.now();
        const sent = await sendAll(door.port, deliveries, END_TO_END_EVENTS);
        await until(before + sent.acknowledged);
        const seconds = (performance.now() - started) / 1000;
        const result = {
          workers,
          eventsPerSecond: sent.acknowledged / seconds,
          ackPerSecond: sent.acknowledged / sent.seconds,
          drainPerSecond: backlog.acknowledged / drainSeconds,
          failures: backlog.failures + sent.failures,
        };
        endToEnd.push(result);
        log(
          `  ${workers} worker${workers === 1 ? '' : 's'}: a backlog of ${backlog.acknowledged} drained at ${Math.round(result.drainPerSecond)} events/s; live, ${sent.acknowledged} events handled in ${seconds.toFixed(2)} s (${Math.round(result.eventsPerSecond)} events/s; acknowledged at ${Math.round(result.ackPerSecond)}/s)${result.failures > 0 ? `; ${result.failures} deliveries failed` : ''}`,
        );
      } finally {
        await queue.close();
        await Promise.all([door, ...running].map((child) => child.stop()));
      }
    }
    return { ack, endToEnd };
  } finally {
    await cleanup(redis, `*${run}*`).catch(() => {});
    redis.disconnect();
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
  for (const handler of ['noop', 'slow'] as const) {
    const { inbox, 'in-request': inRequest } = result.ack[handler];
    const what = handler === 'noop' ? 'no-op handler' : `${SLOW_HANDLER_MS} ms handler`;
    const [inboxP99] = inbox.latency.quantiles(0.99) as [number];
    const [requestP99] = inRequest.latency.quantiles(0.99) as [number];
    const rps = (figures: AckFigures) => `${Math.round(median(figures.rps)).toLocaleString('en-US')}/s`;
    rows.push({
      measure: `inbox door / handlers in the request (node adapter, RedisStore, ${what}): acknowledged deliveries/s`,
      value: x(ratio(inbox.rps, inRequest.rps)),
      target:
        handler === 'slow'
          ? '> 1.00× (the door does not wait for handlers)'
          : '(reported: the door writes to the queue instead)',
      met: handler === 'slow' ? ratio(inbox.rps, inRequest.rps) > 1 : undefined,
      context: `inbox ${rps(inbox)}, in-request ${rps(inRequest)}, ${CONNECTIONS} connections, load generator (autocannon) busy ${Math.round(median(inbox.loadgen) * 100)}% / ${Math.round(median(inRequest.loadgen) * 100)}% (near 100% it sets the pace: read the CPU ratio); receiver CPU per delivery ${x(ratio(inbox.cpu, inRequest.cpu))} (${median(inbox.cpu).toFixed(1)} vs ${median(inRequest.cpu).toFixed(1)} µs)${inbox.failures + inRequest.failures > 0 ? `; failed: inbox ${inbox.failures}, in-request ${inRequest.failures}` : ''}`,
    });
    rows.push({
      measure: `inbox door / handlers in the request (${what}): p99 time to 200`,
      value: x(inboxP99 / requestP99),
      target: handler === 'slow' ? '< 1.00×' : '(reported)',
      met: handler === 'slow' ? inboxP99 / requestP99 < 1 : undefined,
      context: `inbox p99 ${inboxP99.toFixed(2)} ms (p50 ${inbox.latency.quantiles(0.5)[0]!.toFixed(2)} ms), in-request p99 ${requestP99.toFixed(2)} ms (p50 ${inRequest.latency.quantiles(0.5)[0]!.toFixed(2)} ms)`,
    });
  }
  const [one, three] = [1, 3].map((n) => result.endToEnd.find((entry) => entry.workers === n));
  const events = END_TO_END_EVENTS.toLocaleString('en-US');
  for (const entry of [one, three]) {
    if (!entry) continue;
    const workers = `${entry.workers} worker process${entry.workers === 1 ? '' : 'es'} (concurrency 50 each)`;
    rows.push({
      measure: `inbox end to end, ${workers}: events/s from first delivery to last handler completion`,
      value: `${Math.round(entry.eventsPerSecond).toLocaleString('en-US')} events/s`,
      target: '(reported)',
      met: undefined,
      context: `${events} events, the door acknowledging ${Math.round(entry.ackPerSecond).toLocaleString('en-US')}/s meanwhile${entry.failures > 0 ? `; ${entry.failures} deliveries failed` : ''}; door, workers, Redis and the load generator share the machine, unpinned`,
    });
    rows.push({
      measure: `inbox backlog drain, ${workers}: events/s`,
      value: `${Math.round(entry.drainPerSecond).toLocaleString('en-US')} events/s`,
      target: '(reported)',
      met: undefined,
      context: `${events} events queued while the queue was paused, then run`,
    });
  }
  if (one && three) {
    rows.push({
      measure: 'inbox: 3 workers / 1 worker, events/s (end to end; backlog drain)',
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
