#!/usr/bin/env node
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
/**
 * Write package.json `exports` and `typesVersions` and tsconfig.json `paths` from subpaths.mjs, the one
 * list of the public subpaths: run `npm run sync:subpaths` after adding, renaming or removing one.
 * With `--check` it writes nothing and exits 1 when a file is out of step (test/subpaths.test.ts, in
 * the unit tier, checks the same).
 *
 * A file is out of step when its fields mean something else (their layout does not count), and only
 * such a file is written. package.json is written as npm writes it (two spaces, every other field and
 * their order kept); in tsconfig.json only the `paths` block is replaced, one entry a line as Biome
 * formats it, so the rest of the file keeps its layout.
 */
import { isDeepStrictEqual } from 'node:util';
import { packageExports, packageTypesVersions, tsconfigPaths } from '../subpaths.mjs';

const root = fileURLToPath(new URL('../', import.meta.url));
const check = process.argv.includes('--check');
const stale = [];

// package.json
const packageText = readFileSync(`${root}package.json`, 'utf8');
const pkg = JSON.parse(packageText);
const exportsField = packageExports();
const typesVersions = packageTypesVersions();
if (!isDeepStrictEqual(pkg.exports, exportsField) || !isDeepStrictEqual(pkg.typesVersions, typesVersions)) {
  stale.push('package.json');
  pkg.typesVersions = typesVersions;
  pkg.exports = exportsField;
  if (!check) writeFileSync(`${root}package.json`, `${JSON.stringify(pkg, null, 2)}\n`);
}

// tsconfig.json (plain JSON: no comments)
const tsconfigText = readFileSync(`${root}tsconfig.json`, 'utf8');
const paths = tsconfigPaths();
if (!isDeepStrictEqual(JSON.parse(tsconfigText).compilerOptions?.paths, paths)) {
  stale.push('tsconfig.json');
  // The block from `"paths": {` to the closing brace at the same indentation.
  const block = /^( *)"paths": \{\n[\s\S]*?\n\1\}/m.exec(tsconfigText);
  if (!block) throw new Error('tsconfig.json has no "paths" block (`"paths": {` ending a line) to write.');
  const indent = block[1];
  const entries = Object.entries(paths).map(
    ([name, targets]) =>
      `${indent}  ${JSON.stringify(name)}: [${targets.map((target) => JSON.stringify(target)).join(', ')}]`,
  );
  const written = `${indent}"paths": {\n${entries.join(',\n')}\n${indent}}`;
  if (!check) {
    writeFileSync(
      `${root}tsconfig.json`,
      tsconfigText.slice(0, block.index) + written + tsconfigText.slice(block.index + block[0].length),
    );
  }
}

if (stale.length === 0) {
  console.log('package.json and tsconfig.json match subpaths.mjs.');
} else if (check) {
  console.error(`Out of step with subpaths.mjs: ${stale.join(', ')}. Run \`npm run sync:subpaths\`.`);
  process.exitCode = 1;
} else {
  console.log(`Wrote ${stale.join(' and ')} from subpaths.mjs.`);
}
