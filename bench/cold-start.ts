/**
 * Section 1b: an AWS Lambda cold start. The same small function written on this library and on
 * @octokit/webhooks (cold-start/octokit.ts) is bundled with esbuild as a Lambda deployment is (node20,
 * minified, ESM), and each sample is a fresh `node` process that imports the bundle and answers one
 * signed delivery (cold-start/sample.mjs). Ours comes in two variants: with the default memory store
 * (cold-start/ours.ts: `createWebhooks` from the root) and with a store the application brings
 * (cold-start/ours-store.ts: from service-webhooks/core, so without MemoryStore and lru-cache). The
 * variants run interleaved, every order in turn, so load from other processes on the machine falls on
 * all alike. A third variant puts the brought-store function on the DynamoDB store with the AWS SDK
 * loaded from node_modules, as Lambda does (cold-start/ours-dynamodb.ts; no network): the whole cold
 * start of such a function, in context. Also reports each bundle's size, gzipped, and what it is made of.
 *
 * BENCH_COLD_START_BEFORE=<a checkout of an earlier commit, built> adds that build's two variants
 * (`before`, `before-store`) to the same rounds, for a before/after measured side by side.
 *
 * Run alone (on the dist already built): `npx tsx --tsconfig bench/tsconfig.json bench/cold-start.ts`.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build, type Metafile } from 'esbuild';
import { functionUrlEvent } from '../test/adapters/fixtures/lambda-events.js';
import {
  bodyTemplate,
  bodyText,
  eventId,
  formatBytes,
  median,
  medianRatio,
  QUICK,
  quantile,
  rotated,
  runNonce,
  SECRET,
  sign,
} from './shared.js';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const root = here('..');
const OUT = here('./.tmp/cold-start/');

/** An earlier build to compare with, side by side (a checkout whose dist/ is built). */
const BEFORE = process.env.BENCH_COLD_START_BEFORE;

/**
 * The smoke run (BENCH_QUICK=1) samples one of ours, the brought store, against octokit: the DynamoDB
 * variant spends 200+ ms a sample loading the AWS SDK.
 */
export const COLD_START_VARIANTS = [
  ...(QUICK ? (['ours-store'] as const) : (['ours', 'ours-store', 'ours-dynamodb'] as const)),
  'octokit',
  ...(BEFORE ? (['before', 'before-store'] as const) : []),
] as const;
export type ColdStartVariant =
  | 'ours'
  | 'ours-store'
  | 'ours-dynamodb'
  | 'octokit'
  | 'before'
  | 'before-store';

/** Our two functions that are sampled (the `before*` variants are an earlier build of the same two). */
const OUR_SAMPLED = (['ours', 'ours-store'] as const).filter((variant) =>
  (COLD_START_VARIANTS as readonly ColdStartVariant[]).includes(variant),
);

/** What each variant bundles: its function's file, and for `before*` the earlier build's dist/. */
const VARIANT_SOURCES: Record<ColdStartVariant, { entry: string; dist?: string }> = {
  ours: { entry: 'ours' },
  'ours-store': { entry: 'ours-store' },
  'ours-dynamodb': { entry: 'ours-dynamodb' },
  octokit: { entry: 'octokit' },
  before: { entry: 'ours', ...(BEFORE ? { dist: BEFORE } : {}) },
  'before-store': { entry: 'ours-store', ...(BEFORE ? { dist: BEFORE } : {}) },
};

/**
 * Our package names mapped onto an earlier build's files. Builds before the `core` subpath take it from
 * the root; builds that have one must keep it, since their root imports it by name (aliased to the root,
 * the root would import itself and miss every export).
 */
function aliasesFor(dist: string | undefined): Record<string, string> | undefined {
  if (dist === undefined) return undefined;
  const file = (name: string) => `${dist.replace(/\/$/, '')}/dist/${name}.js`;
  return {
    'service-webhooks/core': existsSync(file('core')) ? file('core') : file('index'),
    'service-webhooks/lambda': file('lambda'),
    'service-webhooks': file('index'),
  };
}

/** Rounds of one sample per variant; the first WARMUP_ROUNDS (disk cache, first runs) are dropped. */
const ROUNDS = QUICK ? 4 : 30;
const WARMUP_ROUNDS = QUICK ? 1 : 2;

export interface ColdStartSample {
  /** Loading and evaluating the bundle, which creates the receiver. */
  readonly importMs: number;
  /** The first invocation, from the event to the answer. */
  readonly deliveryMs: number;
  readonly totalMs: number;
  /** The process's CPU time (user + system, every thread) over the same span. */
  readonly cpuMs: number;
  /** The whole process, spawn to exit, as the parent saw it (Node's own start-up included). */
  readonly wallMs: number;
}

export interface BundleInput {
  /** A package (`lru-cache`) or a file of this repository (`dist/index.js`). */
  readonly name: string;
  /** Minified bytes it contributes. */
  readonly bytes: number;
}

export interface BundleReport {
  readonly bytes: number;
  readonly gzip: number;
  readonly inputs: readonly BundleInput[];
  /** For each package in the bundle: how much smaller the gzipped bundle is without it. */
  readonly packageGzip: readonly BundleInput[];
}

/** One of our variants against octokit, each ratio the median of the per-round ratios. */
export interface VariantRatios {
  readonly totalRatio: number;
  readonly cpuRatio: number;
  readonly p90Ratio: number;
  readonly gzipRatio: number;
}

export interface ColdStartResult {
  readonly rounds: number;
  readonly variants: readonly ColdStartVariant[];
  readonly samples: Partial<Record<ColdStartVariant, ColdStartSample[]>>;
  readonly bundles: Partial<Record<ColdStartVariant, BundleReport>>;
  /** Ours (memory store), ours-store (a brought store) and any `before*` variant, against octokit. */
  readonly ratios: Partial<Record<ColdStartVariant, VariantRatios>>;
  /** Each of our two bundles built from the sources instead of dist/, to say which modules its bytes come from. */
  readonly ourModules: Readonly<Partial<Record<'ours' | 'ours-store', readonly BundleInput[]>>>;
}

/** Who a metafile input belongs to: the package under node_modules, or the repository file. */
function owner(input: string): string {
  const path = relative(root, input.startsWith('/') ? input : `${root}${input}`);
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  return match ? match[1]! : path;
}

function inputsOf(metafile: Metafile): BundleInput[] {
  const bytes = new Map<string, number>();
  for (const output of Object.values(metafile.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      const name = owner(input);
      bytes.set(name, (bytes.get(name) ?? 0) + bytesInOutput);
    }
  }
  return [...bytes]
    .map(([name, size]) => ({ name, bytes: size }))
    .filter((input) => input.bytes > 0)
    .sort((a, b) => b.bytes - a.bytes);
}

async function bundle(
  variant: ColdStartVariant,
  options: { external?: string[]; fromSources?: boolean } = {},
): Promise<{ code: Uint8Array; metafile: Metafile }> {
  const source = VARIANT_SOURCES[variant];
  const alias = aliasesFor(source.dist);
  const result = await build({
    entryPoints: [here(`./cold-start/${source.entry}.ts`)],
    outfile: `${OUT}${variant}.mjs`,
    bundle: true,
    minify: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    // bench/tsconfig.json maps nothing, so the library comes from dist/ through its package name, as an
    // app bundles it; the root tsconfig maps it to the sources, which only the breakdown by module uses.
    tsconfig: options.fromSources ? `${root}tsconfig.json` : here('./tsconfig.json'),
    external: [...(variant === 'ours-dynamodb' ? ['@aws-sdk/*'] : []), ...(options.external ?? [])],
    ...(alias ? { alias } : {}),
    metafile: true,
    write: false,
    logLevel: 'error',
  });
  const code = result.outputFiles[0]!.contents;
  return { code, metafile: result.metafile };
}

const gzipBytes = (code: Uint8Array) => gzipSync(code, { level: 9 }).byteLength;

async function report(variant: ColdStartVariant): Promise<{ report: BundleReport; code: Uint8Array }> {
  const { code, metafile } = await bundle(variant);
  const inputs = inputsOf(metafile);
  if (variant !== 'octokit' && !inputs.some((input) => /(^|\/)dist\//.test(input.name)))
    throw new Error(
      `The ${variant} cold-start bundle did not take the library from dist/; run \`npm run build\`.`,
    );
  const gzip = gzipBytes(code);
  const packageGzip: BundleInput[] = [];
  for (const { name } of inputs) {
    if (name.includes('/') && !name.startsWith('@')) continue;
    const without = await bundle(variant, { external: [name] });
    packageGzip.push({ name, bytes: gzip - gzipBytes(without.code) });
  }
  return { report: { bytes: code.byteLength, gzip, inputs, packageGzip }, code };
}

/** A signed Function URL (payload 2.0) event carrying a 2 KiB delivery, for each variant. */
function eventFor(variant: ColdStartVariant): string {
  const id = eventId(runNonce(), 0);
  const body = Buffer.from(bodyText(bodyTemplate(2048), id), 'utf8');
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(body.byteLength),
    'user-agent': 'bench',
    ...(variant !== 'octokit'
      ? { 'x-service-signature': sign(body) }
      : { 'x-hub-signature-256': sign(body), 'x-github-event': 'push', 'x-github-delivery': id }),
  };
  // The adapter tests' event shape (AWS's documented example), so both measure the same event.
  return JSON.stringify(functionUrlEvent({ method: 'POST', headers, body, base64: false }));
}

function sample(bundlePath: string, eventPath: string): ColdStartSample {
  // No NODE_OPTIONS (a loader such as tsx's would be timed too), no compile cache (Node 22+): cold.
  const { NODE_OPTIONS: _options, NODE_COMPILE_CACHE: _cache, ...env } = process.env;
  const started = performance.now();
  const child = spawnSync(process.execPath, [here('./cold-start/sample.mjs'), bundlePath, eventPath], {
    encoding: 'utf8',
    env: { ...env, WEBHOOK_SECRET: SECRET },
  });
  const wallMs = performance.now() - started;
  if (child.status !== 0) throw new Error(`cold-start sample failed:\n${child.stderr}`);
  const result = JSON.parse(child.stdout) as Omit<ColdStartSample, 'wallMs'> & { status: number };
  if (result.status !== 200)
    throw new Error(`${bundlePath} answered ${result.status}; the cold-start fixtures are wrong.`);
  return {
    importMs: result.importMs,
    deliveryMs: result.deliveryMs,
    totalMs: result.totalMs,
    cpuMs: result.cpuMs,
    wallMs,
  };
}

export async function runColdStart(log: (line: string) => void): Promise<ColdStartResult> {
  mkdirSync(OUT, { recursive: true });
  const bundles: Partial<Record<ColdStartVariant, BundleReport>> = {};
  const paths = {} as Record<ColdStartVariant, { bundle: string; event: string }>;
  for (const variant of COLD_START_VARIANTS) {
    const { report: bundleReport, code } = await report(variant);
    bundles[variant] = bundleReport;
    paths[variant] = { bundle: `${OUT}${variant}.mjs`, event: `${OUT}${variant}-event.json` };
    writeFileSync(paths[variant].bundle, code);
    writeFileSync(paths[variant].event, eventFor(variant));
  }
  const ourModules: Partial<Record<'ours' | 'ours-store', readonly BundleInput[]>> = {};
  for (const variant of OUR_SAMPLED)
    ourModules[variant] = inputsOf((await bundle(variant, { fromSources: true })).metafile);

  const samples: Partial<Record<ColdStartVariant, ColdStartSample[]>> = {};
  for (const variant of COLD_START_VARIANTS) samples[variant] = [];
  for (let round = 0; round < WARMUP_ROUNDS + ROUNDS; round++) {
    for (const variant of rotated(COLD_START_VARIANTS, round)) {
      const result = sample(paths[variant].bundle, paths[variant].event);
      if (round >= WARMUP_ROUNDS) samples[variant]!.push(result);
    }
  }
  const pick = (variant: ColdStartVariant, key: keyof ColdStartSample) =>
    samples[variant]!.map((s) => s[key]);
  const octokit = bundles.octokit!;
  const ratios: Partial<Record<ColdStartVariant, VariantRatios>> = {};
  for (const variant of COLD_START_VARIANTS) {
    if (variant === 'octokit') continue;
    ratios[variant] = {
      totalRatio: medianRatio(pick(variant, 'totalMs'), pick('octokit', 'totalMs')),
      cpuRatio: medianRatio(pick(variant, 'cpuMs'), pick('octokit', 'cpuMs')),
      p90Ratio: quantile(pick(variant, 'totalMs'), 0.9) / quantile(pick('octokit', 'totalMs'), 0.9),
      gzipRatio: bundles[variant]!.gzip / octokit.gzip,
    };
  }
  const result: ColdStartResult = {
    rounds: ROUNDS,
    variants: COLD_START_VARIANTS,
    samples,
    bundles,
    ratios,
    ourModules,
  };
  for (const variant of COLD_START_VARIANTS) {
    const { bytes, gzip } = bundles[variant]!;
    log(
      `  ${variant}: ${describeSamples(samples[variant]!)}; bundle ${formatBytes(bytes)}, ${formatBytes(gzip)} gzip`,
    );
  }
  for (const [variant, ratio] of Object.entries(ratios)) {
    log(
      `  ${variant}/octokit: cold start ${ratio.totalRatio.toFixed(2)}× (p90 ${ratio.p90Ratio.toFixed(2)}×), CPU ${ratio.cpuRatio.toFixed(2)}×, gzip ${ratio.gzipRatio.toFixed(2)}×`,
    );
  }
  for (const variant of COLD_START_VARIANTS) {
    if (variant === 'octokit') continue;
    log(`  ${variant} bundle by package (gzip): ${describeInputs(bundles[variant]!.packageGzip, 'gzip')}`);
  }
  for (const variant of OUR_SAMPLED) {
    log(
      `  ${variant} bundle by module (minified, from the sources): ${describeInputs(ourModules[variant]!.slice(0, 10))}`,
    );
  }
  return result;
}

/** Median and p90 of the total, with its parts and CPU (medians), for one variant's samples. */
export function describeSamples(samples: readonly ColdStartSample[]): string {
  const of = (key: keyof ColdStartSample) => samples.map((s) => s[key]);
  const ms = (value: number) => `${value.toFixed(1)} ms`;
  return `${ms(median(of('totalMs')))} (p90 ${ms(quantile(of('totalMs'), 0.9))}; import ${ms(median(of('importMs')))} + first delivery ${ms(median(of('deliveryMs')))}; CPU ${ms(median(of('cpuMs')))}; process ${ms(median(of('wallMs')))})`;
}

export function describeInputs(inputs: readonly BundleInput[], unit = ''): string {
  return inputs.map(({ name, bytes }) => `${name} ${formatBytes(bytes)}${unit ? ` ${unit}` : ''}`).join(', ');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await runColdStart((line) => process.stdout.write(`${line}\n`));
}
