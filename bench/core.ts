/**
 * Section 1: one delivery through the core, in process, against the floor on the same bytes, the
 * pipeline a user would write by hand, and @octokit/webhooks (GitHub's identical sha256= scheme).
 * Variants run in rotating order within each round; every figure is a median over rounds of a ratio
 * taken inside one round.
 */
import { Webhooks as OctokitWebhooks } from '@octokit/webhooks';
import * as lib from 'service-webhooks';
import { floorPipeline, floorVerifyAndParse, type Headers, handWrittenDedup } from './floor.js';
import { type Delivery, deliveries, EVENT_TYPE, median, QUICK, rotated, SECRET, SIZES } from './shared.js';

type Library = typeof lib;

interface Prepared extends Delivery {
  readonly headers: Headers;
}

/** Headers as node:http hands them over, with both our signature header and GitHub's. */
function headersFor(delivery: Delivery): Headers {
  return {
    host: '127.0.0.1:3000',
    'user-agent': 'Service-Webhooks/1.0',
    'content-type': 'application/json',
    'content-length': String(delivery.body.byteLength),
    'x-service-signature': delivery.signature,
    'x-hub-signature-256': delivery.signature,
    'x-github-event': 'push',
    'x-github-delivery': delivery.id,
  };
}

const noop = async (): Promise<void> => {};

/** A delivery as octokit takes it; the body is decoded inside the timed call, as octokit's users must. */
function octokitDelivery(d: Delivery) {
  return { id: d.id, name: 'push' as const, payload: d.body.toString('utf8'), signature: d.signature };
}

/** The built package loaded a second time with node:crypto hidden: the receiver edge runtimes get. */
export async function loadWithoutNodeCrypto(): Promise<Library> {
  const original = process.getBuiltinModule;
  Object.defineProperty(process, 'getBuiltinModule', {
    value: undefined,
    configurable: true,
    writable: true,
  });
  try {
    return (await import(`${import.meta.resolve('service-webhooks')}?without-node-crypto`)) as Library;
  } finally {
    Object.defineProperty(process, 'getBuiltinModule', {
      value: original,
      configurable: true,
      writable: true,
    });
  }
}

/** A variant times one batch over the pool, with fresh state, and returns nanoseconds per delivery. */
type Variant = (pool: readonly Prepared[]) => Promise<number>;

function timed(setup: () => (d: Prepared) => unknown): Variant {
  return async (pool) => {
    const run = setup();
    const start = process.hrtime.bigint();
    for (const delivery of pool) await run(delivery);
    return Number(process.hrtime.bigint() - start) / pool.length;
  };
}

function syncTimed(setup: () => (d: Prepared) => unknown): Variant {
  return async (pool) => {
    const run = setup();
    const start = process.hrtime.bigint();
    for (const delivery of pool) run(delivery);
    return Number(process.hrtime.bigint() - start) / pool.length;
  };
}

function receiver(library: Library) {
  const webhooks = library.createWebhooks({ secret: SECRET, store: new library.MemoryStore() });
  webhooks.on(EVENT_TYPE, noop);
  return webhooks;
}

async function expectOk(status: Promise<{ status: number }> | { status: number }, what: string) {
  const { status: code } = await status;
  if (code !== 200) throw new Error(`${what} answered ${code}; the bench fixtures are wrong.`);
}

export interface CoreSizeResult {
  readonly size: number;
  /** Median nanoseconds per delivery of each variant. */
  readonly ns: Record<string, number>;
  /** Median of per-round ratios of time: core / floor pipeline, core / floor, octokit / core. */
  readonly coreOverPipeline: number;
  readonly coreOverFloor: number;
  readonly octokitOverCore: number;
  /** octokit with the dedup a user adds to it by hand (the same work as the core) / core. */
  readonly octokitDedupOverCore: number;
  /** The lowest and highest of those per-round ratios, so a near tie can be told from a loss. */
  readonly octokitDedupOverCoreRange: readonly [number, number];
  /** octokit alone / floor pipeline: whether bare octokit is cheaper than even the hand-written floor. */
  readonly octokitOverPipeline: number;
  readonly rounds: number;
  readonly pool: number;
}

export interface CoreResults {
  readonly sizes: CoreSizeResult[];
  /** Web Crypto against node:crypto at 2 KiB: receiver handle(), and the verify functions. */
  readonly web: {
    readonly handleWebOverNode: number;
    readonly verifyWebOverNode: number;
    readonly ns: Record<string, number>;
  };
}

async function measure(
  variants: Record<string, Variant>,
  pool: readonly Prepared[],
  rounds: number,
): Promise<Record<string, number[]>> {
  const names = Object.keys(variants);
  const samples: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
  // Round 0 warms every variant up (JIT, lazy keys) and is dropped.
  for (let round = 0; round <= rounds; round++) {
    for (const name of rotated(names, round)) {
      const ns = await variants[name]!(pool);
      if (round > 0) samples[name]!.push(ns);
    }
  }
  return samples;
}

function perRound(samples: Record<string, number[]>, a: string, b: string): number[] {
  const bs = samples[b]!;
  return samples[a]!.map((value, i) => value / bs[i]!);
}

function ratios(samples: Record<string, number[]>, a: string, b: string): number {
  return median(perRound(samples, a, b));
}

function range(values: readonly number[]): readonly [number, number] {
  return [Math.min(...values), Math.max(...values)];
}

export async function runCore(log: (line: string) => void): Promise<CoreResults> {
  const rounds = QUICK ? 3 : 13;
  const budget = (QUICK ? 6 : 24) * 1_048_576;
  const octokit = new OctokitWebhooks({ secret: SECRET });
  octokit.on('push', noop);

  const sizes: CoreSizeResult[] = [];
  // The smoke run (BENCH_QUICK=1) measures one size, the one the targets name first.
  for (const size of QUICK ? ([2048] as const) : SIZES) {
    const count = Math.min(QUICK ? 3000 : 12_000, Math.max(QUICK ? 12 : 48, Math.floor(budget / size)));
    const pool: Prepared[] = deliveries(size, count).map((d) => ({ ...d, headers: headersFor(d) }));
    const first = pool[0]!;
    // Each variant must accept the fixtures, or the comparison is meaningless.
    await expectOk(receiver(lib).handle({ body: first.body, headers: first.headers }), 'handle()');
    if ((await floorPipeline(new Map([[EVENT_TYPE, noop]]))(first.body, first.headers)) !== 200)
      throw new Error('The floor pipeline refused the fixtures.');
    await octokit.verifyAndReceive(octokitDelivery(first));

    const samples = await measure(
      {
        floor: syncTimed(() => (d) => floorVerifyAndParse(d.body, d.headers['x-service-signature'])),
        pipeline: timed(() => {
          const run = floorPipeline(new Map([[EVENT_TYPE, noop]]));
          return (d) => run(d.body, d.headers);
        }),
        core: timed(() => {
          const webhooks = receiver(lib);
          return (d) => webhooks.handle({ body: d.body, headers: d.headers });
        }),
        octokit: timed(() => (d) => octokit.verifyAndReceive(octokitDelivery(d))),
        // octokit does not deduplicate: its users add it in the handler, after verification.
        octokitDedup: timed(() => {
          const isNew = handWrittenDedup();
          const withDedup = new OctokitWebhooks({ secret: SECRET });
          withDedup.on('push', (event) => (isNew(event.id) ? noop() : undefined));
          return (d) => withDedup.verifyAndReceive(octokitDelivery(d));
        }),
      },
      pool,
      rounds,
    );
    const result: CoreSizeResult = {
      size,
      ns: Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, median(values)])),
      coreOverPipeline: ratios(samples, 'core', 'pipeline'),
      coreOverFloor: ratios(samples, 'core', 'floor'),
      octokitOverCore: ratios(samples, 'octokit', 'core'),
      octokitDedupOverCore: ratios(samples, 'octokitDedup', 'core'),
      octokitDedupOverCoreRange: range(perRound(samples, 'octokitDedup', 'core')),
      octokitOverPipeline: ratios(samples, 'octokit', 'pipeline'),
      rounds,
      pool: count,
    };
    log(
      `core ${size} B: ${Object.entries(result.ns)
        .map(([name, ns]) => `${name} ${(ns / 1000).toFixed(2)} µs`)
        .join(', ')}; core/pipeline ${result.coreOverPipeline.toFixed(3)}`,
    );
    sizes.push(result);
  }

  const webLib = await loadWithoutNodeCrypto();
  const pool: Prepared[] = deliveries(2048, QUICK ? 2000 : 8000).map((d) => ({
    ...d,
    headers: headersFor(d),
  }));
  await expectOk(receiver(webLib).handle({ body: pool[0]!.body, headers: pool[0]!.headers }), 'web handle()');
  const samples = await measure(
    {
      handleNode: timed(() => {
        const webhooks = receiver(lib);
        return (d) => webhooks.handle({ body: d.body, headers: d.headers });
      }),
      handleWeb: timed(() => {
        const webhooks = receiver(webLib);
        return (d) => webhooks.handle({ body: d.body, headers: d.headers });
      }),
      verifyNode: syncTimed(() => (d) => lib.verifySignature(d.body, d.signature, SECRET)),
      verifyWeb: timed(() => (d) => lib.verifySignatureWeb(d.body, d.signature, SECRET)),
    },
    pool,
    rounds,
  );
  const web = {
    // Expressed as throughput ratios (web / node), as the reference figure (~0.3x) is.
    handleWebOverNode: ratios(samples, 'handleNode', 'handleWeb'),
    verifyWebOverNode: ratios(samples, 'verifyNode', 'verifyWeb'),
    ns: Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, median(values)])),
  };
  log(
    `web crypto 2 KiB: handle ${web.handleWebOverNode.toFixed(2)}x, verify ${web.verifyWebOverNode.toFixed(2)}x of node:crypto`,
  );
  return { sizes, web };
}
