/**
 * Section 1c: what one delivery through the core costs a server, measured the way a server pays it.
 *
 * Section 1 times a tight loop over one reused pool by wall clock; that flatters whatever keeps hot
 * caches and leaves its garbage for later. Here every segment gets fresh fixtures (new ids, new bodies)
 * and starts from a collected heap; each variant keeps one receiver for the whole run, as a server keeps
 * its receiver, and warms it untimed after the collection (which drops optimized code whose hidden
 * classes died with the garbage), as the shared harness does (../shared/bench/core-cost.mjs: a fresh
 * receiver per segment measured V8 compiling the delivery path again inside every timed segment, not
 * what a server pays). The cost is the process's CPU
 * time (`process.cpuUsage`: every thread of the process, so the GC's helper threads count); and the
 * loop yields to the event loop every {@link TURN_EVERY} deliveries, as a server does between network
 * reads, so promises, timers and the garbage they leave are paid inside the segment that made them.
 * Variants run in A-B-B-A order within a round; each figure is the median over rounds of the ratio
 * (or the difference) taken within one round.
 *
 * Run alone: `npx tsx --tsconfig bench/tsconfig.json bench/server-cost.ts` after `npm run build`.
 * `BENCH_CORE_BEFORE=/path/to/bundle.mjs` adds a third variant, an earlier build of the core, for an
 * A/B of a change in one run.
 */
import { setImmediate as turn } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { floorPipeline, type Headers } from './floor.js';
import { eventId, median, QUICK, runNonce, SECRET, sign } from './shared.js';

/** A server reads more requests from the network about this often. */
const TURN_EVERY = 256;
const DELIVERIES_PER_SEGMENT = QUICK ? 2_000 : 20_000;
const ROUNDS = QUICK ? 2 : 9;

export type Library = typeof import('service-webhooks');

/** The two shapes measured: a realistic `user.created` (~300 B) and 2 KiB that is mostly one string. */
export const SERVER_COST_SHAPES = ['user.created, ~300 B', '2 KiB, mostly one string'] as const;
export type Shape = (typeof SERVER_COST_SHAPES)[number];

export interface Fixture {
  readonly body: Buffer;
  readonly headers: Headers;
}

function eventText(shape: Shape, id: string, n: number): string {
  const created = Math.floor(Date.now() / 1000);
  const user = `usr_${String(n).padStart(12, '0')}`;
  const bio =
    shape === SERVER_COST_SHAPES[0]
      ? ''
      : `,"bio":"${'Ada wrote the first published program for the Analytical Engine. '.repeat(27).slice(0, 1_650)}"`;
  return `{"id":"${id}","type":"user.created","created":${created},"livemode":true,"pending_webhooks":1,"request":{"id":"req_${String(n).padStart(14, '0')}"},"data":{"object":"user","id":"${user}","name":"Ada Lovelace","email":"ada.lovelace+${n}@example.com"${bio}}}`;
}

/** Fresh deliveries for one segment: ids never seen before, bodies built anew. */
function fixtures(shape: Shape, count: number): Fixture[] {
  const nonce = runNonce();
  const list: Fixture[] = [];
  for (let n = 0; n < count; n++) {
    const body = Buffer.from(eventText(shape, eventId(nonce, n), n), 'utf8');
    list.push({
      body,
      headers: {
        host: '127.0.0.1:3000',
        'content-type': 'application/json',
        'content-length': String(body.byteLength),
        'x-service-signature': sign(body),
      },
    });
  }
  return list;
}

/** A receiver under test: built once per run (see {@link segment}), answers one delivery with its status. */
export type Variant = () => (fixture: Fixture) => number | Promise<number>;

/** Each variant's one receiver for the whole run. */
const receivers = new WeakMap<Variant, (fixture: Fixture) => number | Promise<number>>();
/** Untimed deliveries per segment after its collection, back to the steady state. */
const WARM_DELIVERIES = QUICK ? 200 : 3_000;

function libraryVariant(library: Library): Variant {
  return () => {
    const webhooks = library.createWebhooks({ secret: SECRET, store: new library.MemoryStore() });
    webhooks.on('user.created', async () => {});
    return async (fixture) =>
      (await webhooks.handle({ body: fixture.body, headers: fixture.headers })).status;
  };
}

function floorVariant(): Variant {
  return () => {
    const pipeline = floorPipeline(new Map([['user.created', async () => {}]]));
    return (fixture) => pipeline(fixture.body, fixture.headers);
  };
}

/** Where a segment's deliveries come from: one of the shapes above, or a maker of fixtures. */
export type FixtureSource = Shape | ((count: number) => Fixture[]);

/** CPU microseconds per delivery of one segment: fresh fixtures through the variant's one receiver. */
export async function segment(variant: Variant, source: FixtureSource): Promise<number> {
  const make = (count: number) => (typeof source === 'function' ? source(count) : fixtures(source, count));
  let warm: Fixture[] | undefined = make(WARM_DELIVERIES);
  const list = make(DELIVERIES_PER_SEGMENT);
  let run = receivers.get(variant);
  if (run === undefined) {
    run = variant();
    receivers.set(variant, run);
  }
  // The previous segment's garbage is collected before the clock starts, not billed to this one.
  globalThis.gc?.();
  await turn();
  for (const fixture of warm) await run(fixture);
  warm = undefined;
  await turn();
  const before = process.cpuUsage();
  for (let i = 0; i < list.length; i++) {
    const status = await run(list[i]!);
    if (status !== 200) throw new Error(`A delivery was answered ${status}.`);
    if (i % TURN_EVERY === TURN_EVERY - 1) await turn();
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / list.length;
}

/**
 * Each variant's CPU µs per delivery, one sample per round: after one warm-up segment each (so no
 * variant pays the JIT's first compilation in a measured round), rounds of A-B-B-A (A-B-C-C-B-A),
 * the order reversed every other round, so each variant runs as often early as late.
 */
export async function sideBySide(
  variants: readonly (readonly [string, Variant])[],
  source: FixtureSource,
  rounds: number,
): Promise<Map<string, number[]>> {
  for (const [, variant] of variants) await segment(variant, source);
  const samples = new Map<string, number[]>(variants.map(([name]) => [name, []]));
  for (let round = 0; round < rounds; round++) {
    const forward = [...variants, ...[...variants].reverse()];
    const order = round % 2 === 0 ? forward : [...forward].reverse();
    const sums = new Map<string, number>();
    for (const [name, variant] of order)
      sums.set(name, (sums.get(name) ?? 0) + (await segment(variant, source)));
    for (const [name, sum] of sums) samples.get(name)!.push(sum / 2);
  }
  return samples;
}

export interface ServerCostRow {
  readonly shape: Shape;
  /** Median over rounds of core / floor CPU per delivery. */
  readonly ratio: number;
  /** Median over rounds of core − floor, CPU µs per delivery. */
  readonly overFloorMicros: number;
  readonly floorMicros: number;
  readonly coreMicros: number;
  /** With BENCH_CORE_BEFORE: median of current / before, CPU per delivery. */
  readonly againstBefore: number | undefined;
  readonly rounds: number;
}

export async function runServerCost(log: (line: string) => void): Promise<ServerCostRow[]> {
  const library = (await import('service-webhooks')) as Library;
  const beforePath = process.env.BENCH_CORE_BEFORE;
  const before = beforePath ? ((await import(pathToFileURL(beforePath).href)) as Library) : undefined;
  const variants: [string, Variant][] = [
    ['floor', floorVariant()],
    ['core', libraryVariant(library)],
  ];
  if (before) variants.push(['before', libraryVariant(before)]);
  if (!globalThis.gc) log('  (no --expose-gc: garbage from one segment may be billed to the next)');
  const rows: ServerCostRow[] = [];
  // The smoke run (BENCH_QUICK=1) measures the realistic ~300 B event alone.
  for (const shape of QUICK ? [SERVER_COST_SHAPES[0]] : SERVER_COST_SHAPES) {
    const samples = await sideBySide(variants, shape, ROUNDS);
    const floor = samples.get('floor')!;
    const core = samples.get('core')!;
    const previous = samples.get('before');
    const row: ServerCostRow = {
      shape,
      ratio: median(core.map((value, i) => value / floor[i]!)),
      overFloorMicros: median(core.map((value, i) => value - floor[i]!)),
      floorMicros: median(floor),
      coreMicros: median(core),
      againstBefore: previous ? median(core.map((value, i) => value / previous[i]!)) : undefined,
      rounds: ROUNDS,
    };
    rows.push(row);
    log(
      `  ${shape}: core / floor ${row.ratio.toFixed(2)}× (${row.coreMicros.toFixed(2)} vs ${row.floorMicros.toFixed(2)} CPU µs, +${row.overFloorMicros.toFixed(2)} µs)${row.againstBefore === undefined ? '' : `; current / before ${row.againstBefore.toFixed(3)}×`}`,
    );
  }
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  // `--json`: progress on stderr and the rows as JSON on stdout, for bench/run.ts, which runs this
  // section in a process of its own (with --expose-gc, and no other section's heap to collect).
  const json = process.argv.includes('--json');
  const rows = await runServerCost((line) => (json ? console.error(line) : console.log(line)));
  if (json) console.log(JSON.stringify(rows));
}
