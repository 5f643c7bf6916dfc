#!/usr/bin/env node
// Builds the `service-webhooks dev` page: src/dashboard/ui → dist/dashboard (or the directory in argv[2]).
// Runs after tsup. Prints each file's raw and gzip size, and fails when the page outgrows its budget.
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

// The whole page, gzipped. Preact is about 5 KiB of it; the budget leaves room for the page to grow while
// keeping the package small for everyone who installs it and never runs the dashboard, and it catches an
// accidental import of a large dependency (a second UI library, a polyfill, a server module) at build time.
const BUDGET_GZIP_BYTES = 40 * 1024;

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ui = join(root, 'src/dashboard/ui');
const out = resolve(process.argv[2] ?? join(root, 'dist/dashboard'));
mkdirSync(out, { recursive: true });

const common = { bundle: true, minify: true, legalComments: 'none', logLevel: 'warning', target: 'es2022' };

await build({
  ...common,
  entryPoints: [join(ui, 'main.tsx')],
  outfile: join(out, 'app.js'),
  format: 'esm',
  platform: 'browser',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  tsconfig: join(ui, 'tsconfig.json'),
});
await build({ ...common, entryPoints: [join(ui, 'app.css')], outfile: join(out, 'app.css') });
copyFileSync(join(ui, 'index.html'), join(out, 'index.html'));

const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`.padStart(10);
let totalRaw = 0;
let totalGzip = 0;
console.log(`dashboard → ${out}`);
for (const name of ['index.html', 'app.js', 'app.css']) {
  const bytes = readFileSync(join(out, name));
  const gzip = gzipSync(bytes, { level: 9 }).length;
  totalRaw += bytes.length;
  totalGzip += gzip;
  console.log(`  ${name.padEnd(12)}${kib(bytes.length)} raw${kib(gzip)} gzip`);
}
console.log(
  `  ${'total'.padEnd(12)}${kib(totalRaw)} raw${kib(totalGzip)} gzip (budget ${kib(BUDGET_GZIP_BYTES).trim()})`,
);
if (totalGzip > BUDGET_GZIP_BYTES) {
  console.error(
    `The dashboard is ${totalGzip - BUDGET_GZIP_BYTES} bytes over its gzip budget of ${BUDGET_GZIP_BYTES} bytes.`,
  );
  process.exit(1);
}
