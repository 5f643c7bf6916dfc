import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { extractBlocks } from '../../scripts/docs/snippets.mjs';
import { repoPath } from '../support/paths.js';
import { docBlock, gettingStartedProject, GETTING_STARTED as PAGE } from './support.js';

/** The ```text block the page shows right after the command that runs the file, as "It prints:". */
function printedOnThePage(): string[] {
  const blocks = extractBlocks(readFileSync(repoPath(PAGE), 'utf8'));
  const index = blocks.findIndex((block) => block.id === 'first-receiver-start');
  const shown = blocks[index + 1];
  expect(shown?.lang).toBe('text');
  return (shown?.code ?? '').trim().split('\n');
}

test('getting started: in a project made as the page says, the first receiver runs its handler once, answers the retry as a duplicate, and prints what the page shows', async () => {
  // The page's own commands, run in a new folder: `npm init -y` makes a CommonJS project.
  const project = await gettingStartedProject('getting-started');
  try {
    expect(project.packageJson().type).toBe('commonjs');
    project.save(docBlock(PAGE, 'first-receiver'), 'first-receiver.ts');
    const { stdout } = await project.shell(docBlock(PAGE, 'first-receiver-start').code, {}, 30_000);
    const lines = stdout.trim().split('\n');
    expect(lines).toEqual([
      'handler ran for ada@example.com',
      'first delivery: 200 {"received":true}',
      'the same event again: 200 (duplicate) {"received":true,"duplicate":true}',
      'handler calls: 1',
    ]);
    expect(lines).toEqual(printedOnThePage());
  } finally {
    project.remove();
  }
}, 180_000);
