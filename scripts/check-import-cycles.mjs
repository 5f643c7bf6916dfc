#!/usr/bin/env node
// Fails when the modules under the given folders import each other in a circle.
//
// Why a circle matters even when every edge is `import type`: a type-only circle is harmless
// at runtime today, but it says two files share one concept, and the next value import along
// it becomes a load-order bug (an `undefined` class in a bundle, a TDZ error under ESM).
// So every import counts here: value, type-only, re-export and dynamic `import()`.
//
// Imports are resolved as TypeScript resolves them with the repository's tsconfig, so a
// package self-reference (`service-webhooks/core`) is followed to its source like a relative one.
//
// Usage, from the repository root: node scripts/check-import-cycles.mjs [--tsconfig FILE] [folder...]
//   (defaults: tsconfig.json and the folders src and adapters)
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const SOURCE_FILE = /\.(?:ts|tsx|mts|cts)$/;

/** Every TypeScript source file below `folder`, declaration files and node_modules left out. */
function sourceFilesBelow(folder) {
  const files = [];
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist') continue;
    const path = join(folder, entry.name);
    if (entry.isDirectory()) files.push(...sourceFilesBelow(path));
    else if (SOURCE_FILE.test(entry.name) && !entry.name.endsWith('.d.ts')) files.push(path);
  }
  return files;
}

function compilerOptionsOf(tsconfigPath) {
  const read = ts.readConfigFile(tsconfigPath, ts.sys.readFile);
  if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, '\n'));
  return ts.parseJsonConfigFileContent(read.config, ts.sys, dirname(tsconfigPath)).options;
}

/**
 * The import graph of `files`: for each file, the files of the same set that it imports.
 * An import that resolves outside the set (a package, a file in another folder) is no edge.
 */
export function importGraph(files, compilerOptions) {
  const inSet = new Set(files);
  const graph = new Map();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = new Set();
    for (const { fileName: specifier } of importedFiles) {
      const resolved = ts.resolveModuleName(specifier, file, compilerOptions, ts.sys).resolvedModule;
      const target = resolved && resolve(resolved.resolvedFileName);
      if (target && target !== file && inSet.has(target)) targets.add(target);
    }
    graph.set(file, [...targets].sort());
  }
  return graph;
}

/**
 * The strongly connected components of more than one file (Tarjan's algorithm, iterative so a
 * deep graph cannot overflow the stack), each with one concrete circle through it to print.
 */
export function importCircles(graph) {
  const index = new Map();
  const low = new Map();
  const onStack = new Set();
  const stack = [];
  const components = [];
  let next = 0;
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work = [{ node: start, edge: 0 }];
    index.set(start, next);
    low.set(start, next);
    next += 1;
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const edges = graph.get(frame.node);
      if (frame.edge < edges.length) {
        const target = edges[frame.edge];
        frame.edge += 1;
        if (!index.has(target)) {
          index.set(target, next);
          low.set(target, next);
          next += 1;
          stack.push(target);
          onStack.add(target);
          work.push({ node: target, edge: 0 });
        } else if (onStack.has(target)) {
          low.set(frame.node, Math.min(low.get(frame.node), index.get(target)));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1].node;
        low.set(parent, Math.min(low.get(parent), low.get(frame.node)));
      }
      if (low.get(frame.node) === index.get(frame.node)) {
        const component = [];
        let member;
        do {
          member = stack.pop();
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        if (component.length > 1) components.push(component.sort());
      }
    }
  }
  return components.map((members) => ({ members, circle: circleThrough(graph, members) }));
}

/** The shortest path from the component's first file back to itself, staying inside it. */
function circleThrough(graph, members) {
  const inside = new Set(members);
  const from = members[0];
  const previous = new Map();
  const queue = [from];
  while (queue.length > 0) {
    const node = queue.shift();
    for (const target of graph.get(node)) {
      if (!inside.has(target)) continue;
      if (target === from) {
        const path = [node];
        while (path[0] !== from) path.unshift(previous.get(path[0]));
        return [...path, from];
      }
      if (!previous.has(target)) {
        previous.set(target, node);
        queue.push(target);
      }
    }
  }
  return members;
}

function main(argv) {
  const started = performance.now();
  const root = process.cwd();
  let tsconfig = 'tsconfig.json';
  const folders = [];
  for (let i = 0; i < argv.length; i += 1) {
    if (argv[i] === '--tsconfig') tsconfig = argv[++i];
    else folders.push(argv[i]);
  }
  if (folders.length === 0) folders.push('src', 'adapters');
  const compilerOptions = compilerOptionsOf(resolve(root, tsconfig));
  const files = folders.flatMap((folder) => sourceFilesBelow(resolve(root, folder)));
  const circles = importCircles(importGraph(files, compilerOptions));
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const shown = (file) => relative(root, file).split(sep).join('/');
  if (circles.length === 0) {
    console.log(`No import circles among ${files.length} files in ${folders.join(', ')} (${seconds} s).`);
    return 0;
  }
  console.error(`${circles.length} import circle(s) among ${files.length} files in ${folders.join(', ')}:`);
  for (const { members, circle } of circles) {
    console.error(`\n  ${circle.map(shown).join('\n    -> ')}`);
    if (members.length > circle.length - 1) {
      console.error(
        `  (one circle of ${members.length} files that import each other: ${members.map(shown).join(', ')})`,
      );
    }
  }
  console.error(
    '\nBreak each by moving the piece both files need into a module of its own that neither imports back.',
  );
  return 1;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv.slice(2));
}
