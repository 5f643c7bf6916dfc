/**
 * Where the time goes, side by side: reads the CPU profiles that `BENCH_PROFILE=<dir> npm run bench`
 * wrote into <dir>/<variant> (<dir>/<variant>-1MiB for the big-body section), merges each variant's profiles, and
 * prints each function's share of the variant's busy time (idle left out), one column per variant.
 *
 *   npx tsx --tsconfig bench/tsconfig.json bench/profile-summary.ts /tmp/prof [rows]
 *
 * Shares rather than milliseconds: the variants answered different numbers of requests, and a share
 * compared with the server CPU per request of bench/RESULTS.md gives microseconds per request.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

/** A short, stable name for a frame: the function and the package or file it lives in. */
function frameName({ functionName, url, lineNumber }: CpuProfile['nodes'][number]['callFrame']): string {
  const name = functionName || '(anonymous)';
  if (url === '') return name;
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const [scopeOrName, scoped] = url.slice(modules + '/node_modules/'.length).split('/');
    return `${name} ${scopeOrName?.startsWith('@') ? `${scopeOrName}/${scoped}` : scopeOrName}`;
  }
  if (url.startsWith('node:')) return `${name} ${url}`;
  return `${name} ${url.slice(url.lastIndexOf('/') + 1)}:${lineNumber + 1}`;
}

/** Microseconds of self time per frame name over every profile in `folder`, idle left out. */
function selfTimes(folder: string): Map<string, number> {
  const times = new Map<string, number>();
  for (const file of readdirSync(folder).filter((name) => name.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(join(folder, file), 'utf8')) as CpuProfile;
    const names = new Map(profile.nodes.map((node) => [node.id, frameName(node.callFrame)]));
    // A sample's time is the gap to the next one: the time the sampled frame kept running.
    for (let i = 0; i + 1 < profile.samples.length; i++) {
      const name = names.get(profile.samples[i]!)!;
      if (name === '(idle)') continue;
      times.set(name, (times.get(name) ?? 0) + profile.timeDeltas[i + 1]!);
    }
  }
  return times;
}

const [root, rowsArgument] = process.argv.slice(2);
if (!root) {
  console.error('Usage: profile-summary.ts <BENCH_PROFILE dir> [rows]');
  process.exit(2);
}
const variants = readdirSync(root, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .sort();
const shares = new Map<string, Map<string, number>>();
for (const variant of variants) {
  const times = selfTimes(join(root, variant));
  const busy = [...times.values()].reduce((sum, time) => sum + time, 0);
  shares.set(variant, new Map([...times].map(([name, time]) => [name, time / busy])));
}
// The rows: the functions that weigh most in any variant, so what one variant adds shows up.
const rows = Number(rowsArgument ?? 25);
const names = new Set<string>();
for (const share of shares.values()) {
  for (const [name] of [...share].sort((a, b) => b[1] - a[1]).slice(0, rows)) names.add(name);
}
const row = (name: string) => variants.map((variant) => shares.get(variant)!.get(name) ?? 0);
console.log(`| function | ${variants.join(' | ')} |`);
console.log(`|---|${variants.map(() => '---:').join('|')}|`);
const table = [...names].map((name) => ({ name, cells: row(name) }));
for (const { name, cells } of table.sort((a, b) => Math.max(...b.cells) - Math.max(...a.cells))) {
  const shown = cells.map((share) => `${(share * 100).toFixed(1)}%`);
  console.log(`| ${name.replaceAll('|', '\\|')} | ${shown.join(' | ')} |`);
}
