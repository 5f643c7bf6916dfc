/**
 * Run a block of the documentation as a reader would: `docBlock` finds the block a page marks with
 * `<!-- run: id -->`, `writeRunnable` turns a TypeScript block into a module (esbuild strips the types,
 * as tsx would for the reader) inside the repository, so `service-webhooks` resolves to the built
 * package through its own `exports`, and `runNode` runs it and collects its output.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { transform } from 'esbuild';
import { expect } from 'vitest';
import { type DocumentationBlock, docBlock } from '../../scripts/docs/snippets.mjs';
import { repoPath } from '../support/paths.js';

const execFileAsync = promisify(execFile);

export { docBlock };

/** Write a block as a runnable .mjs file in .docs-snippets/run/ and give its path. */
export async function writeRunnable(block: DocumentationBlock, name: string): Promise<string> {
  const dir = repoPath('.docs-snippets', 'run');
  mkdirSync(dir, { recursive: true });
  const code =
    block.lang === 'ts' || block.lang === 'typescript'
      ? (await transform(block.code, { loader: 'ts', format: 'esm', target: 'node20' })).code
      : block.code;
  const file = join(dir, `${name}.mjs`);
  writeFileSync(file, code);
  return file;
}

/** Run `file` with this Node, with `env` added, and resolve to its output; rejects on a non-zero exit. */
export async function runNode(
  file: string,
  env: Record<string, string> = {},
  timeoutMs = 60_000,
): Promise<{ stdout: string; stderr: string }> {
  return execFileAsync(process.execPath, [file], {
    cwd: repoPath(),
    env: { ...process.env, ...env },
    timeout: timeoutMs,
  });
}

/**
 * What every store page's local recipe prints (one signed event delivered twice), checked line by line;
 * gives the event id, for the test to look the record up in the store.
 */
export function expectHandledOnceThenDuplicate(stdout: string): string {
  const lines = stdout.trim().split('\n');
  expect(lines).toHaveLength(3);
  expect(lines[0]).toMatch(/^handled evt_\S+ for ada@example\.com$/);
  expect(lines[1]).toBe('first delivery: 200 {"received":true}, handler runs: 1');
  expect(lines[2]).toBe('same event again: 200, duplicate: true, handler runs: 1');
  return /^handled (evt_\S+) /.exec(lines[0] ?? '')?.[1] ?? '';
}
