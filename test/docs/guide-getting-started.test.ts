import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { extractBlocks } from '../../scripts/docs/snippets.mjs';
import { repoPath } from '../support/paths.js';
import { docBlock, runNode, writeRunnable } from './support.js';

const PAGE = 'docs/guide/getting-started.md';

/** The ```text block the page shows right after the run block, as "It prints:". */
function printedOnThePage(): string[] {
  const blocks = extractBlocks(readFileSync(repoPath(PAGE), 'utf8'));
  const index = blocks.findIndex((block) => block.id === 'first-receiver');
  const shown = blocks[index + 1];
  expect(shown?.lang).toBe('text');
  return (shown?.code ?? '').trim().split('\n');
}

test('getting started: the first receiver runs its handler once, answers the retry as a duplicate, and prints what the page shows', async () => {
  const file = await writeRunnable(docBlock(PAGE, 'first-receiver'), 'guide-first-receiver');
  const { stdout } = await runNode(file, {}, 30_000);
  const lines = stdout.trim().split('\n');
  expect(lines).toEqual([
    'handler ran for ada@example.com',
    'first delivery: 200 {"received":true}',
    'the same event again: 200 (duplicate) {"received":true,"duplicate":true}',
    'handler calls: 1',
  ]);
  expect(lines).toEqual(printedOnThePage());
});
