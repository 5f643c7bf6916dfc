// What each guarantee costs a delivery, by the shared harness (../shared/bench/core-cost.mjs): the
// harness is run on the built core as it is, then on copies of dist/ with one guarantee taken out at a
// time, and each variant's ratio to the hand-written floor is printed beside the whole core's. The
// difference is that guarantee's share of the core/floor ratio. The copies are experiments, never
// shipped: each takes out something a receiver must do (see the README's order of work).
//
//   npm run build && node bench/guarantee-cost.mjs            (SIZE=300 by default; ROUNDS=9)
//   SIZE=2048 ROUNDS=15 node bench/guarantee-cost.mjs
//
// A patch that no longer matches the built code fails the run, so a refactor cannot silently turn a
// variant into the whole core. Run it on a quiet machine: the variants are measured one after another.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const HARNESS = resolve(ROOT, '..', 'shared', 'bench', 'core-cost.mjs');
const WORK = join(tmpdir(), 'service-webhooks-guarantee-cost');

/** Each variant: the guarantee taken out, and the text replacements in the built files that take it out. */
const VARIANTS = [
  ['whole core', []],
  [
    'envelope check (id, type, created, data, livemode)',
    [['function checkEnvelope(value, path) {\n', 'function checkEnvelope(value, path) {\n  return value;\n']],
  ],
  ['UTF-8 refusal (isUtf8 before decoding)', [['    if (!isUtf8(body)) return void 0;\n', '']]],
  [
    'age window of the signed `created`',
    [['if (ageSeconds > maxEventAgeSeconds || ageSeconds < -', 'if (false && ageSeconds < -']],
  ],
  [
    'handler budget (timeout race, abortable context)',
    [
      [
        '  if (!(running instanceof Promise)) return then(thenContext, running);\n',
        '  if (!(running instanceof Promise)) return then(thenContext, running);\n  return running.then(() => then(thenContext, SUCCEEDED), (cause) => then(thenContext, toFailed(cause)));\n',
      ],
    ],
  ],
  [
    'exactly-once claim and completion (store calls, claim token)',
    [
      [' : store.claim(key, run.token, leaseMs, run.rememberMs),', ' : "claimed",'],
      [' : store.complete(run.key, run.token, run.rememberMs),', ' : "completed",'],
      ['    this.token = nextClaimToken();', '    this.token = "t";'],
    ],
  ],
  [
    'of which: recording the handled id in the memory store (lru-cache set)',
    [['    this.#completed.set(key, Math.ceil(now + ttlMs), this.#setOptions);\n', '', 'index.js']],
  ],
  [
    "of which: the memory store's lease table (the in-progress claim)",
    [
      ['    const lease = this.#leases.get(key);', '    const lease = void 0;', 'index.js'],
      [
        '    this.#leases.set(key, token, now + leaseMs);\n    return "claimed";',
        '    return "claimed";',
        'index.js',
      ],
      ['    const lease = this.#leases.get(key);', '    const lease = void 0;', 'index.js'],
    ],
  ],
  [
    'handle() never rejects (catch on the answer)',
    [
      [
        'answer instanceof Promise ? answer.catch(this.#unexpected) :',
        'answer instanceof Promise ? answer :',
      ],
    ],
  ],
];

function variantDir(index, replacements) {
  const dir = join(WORK, String(index));
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  cpSync(join(ROOT, 'dist'), join(dir, 'dist'), { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  // Each replacement applies to dist/core.js (the engine) unless it names dist/index.js (MemoryStore).
  for (const [from, to, name = 'core.js'] of replacements) {
    const file = join(dir, 'dist', name);
    const code = readFileSync(file, 'utf8');
    if (!code.includes(from))
      throw new Error(`The patch no longer matches dist/${name}: ${JSON.stringify(from)}`);
    writeFileSync(file, code.replace(from, to));
  }
  return dir;
}

const rows = [];
for (const [index, [name, replacements]] of VARIANTS.entries()) {
  const dir = variantDir(index, replacements);
  const script = HARNESS;
  // The harness exits 1 when its target is missed, which every variant here may do: read its line.
  const run = spawnSync(process.execPath, [script], {
    cwd: dir,
    env: { ...process.env, PROJECT_DIR: dir, SIZE: process.env.SIZE ?? '300' },
    encoding: 'utf8',
  });
  const out = run.stdout;
  if (!/x CPU time/.test(out)) throw new Error(`The harness failed on "${name}": ${run.stderr || out}`);
  const ratio = Number(/: ([\d.]+)x CPU time/.exec(out)?.[1]);
  rows.push([name, ratio]);
  console.error(`${name}: ${out.trim()}`);
}
const whole = rows[0][1];
console.log(`| without | core/floor CPU at ${process.env.SIZE ?? 300} B | share of the ratio |`);
console.log('|---|---:|---:|');
for (const [name, ratio] of rows) {
  console.log(
    `| ${name === 'whole core' ? '(nothing: the whole core)' : name} | ${ratio.toFixed(2)}x | ${name === 'whole core' ? '' : (whole - ratio).toFixed(2)} |`,
  );
}
rmSync(WORK, { recursive: true, force: true });
