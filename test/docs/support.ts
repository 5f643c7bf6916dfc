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
