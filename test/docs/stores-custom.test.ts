/**
 * docs/stores/custom.md's example store, run as a reader runs it on the built package: checkStore finds
 * no violation in it, and the bug the page suggests introducing (a lease counted as ended early) is
 * caught, under rule 1.
 */
import { expect, test } from 'vitest';
import { docBlock, runNode, writeRunnable } from './support.js';

const EXACT = 'if (row !== undefined && row.expiresAt > now) return [row.state, row];';
const EARLY = 'if (row !== undefined && row.expiresAt > now + 1) return [row.state, row];';

test('the example MapStore passes checkStore on the virtual clock', async () => {
  const block = docBlock('docs/stores/custom.md', 'custom-store-check');
  const file = await writeRunnable(block, 'stores-custom-check');
  const { stdout } = await runNode(file, { HISTORIES: '1000' });
  expect(stdout).toMatch(/^MapStore: 1000 histories, \d+ calls, no violation \(seed -?\d+\)$/m);
}, 60_000);

test('with the lease counted as ended early, as the page suggests, checkStore reports rule 1', async () => {
  const block = docBlock('docs/stores/custom.md', 'custom-store-check');
  expect(block.code).toContain(EXACT);
  const file = await writeRunnable(
    { ...block, code: block.code.replace(EXACT, EARLY) },
    'stores-custom-early',
  );
  const failure = await runNode(file, { HISTORIES: '1000' }).then(
    () => undefined,
    (error: { stderr: string }) => error,
  );
  expect(failure?.stderr).toMatch(/rule 1: /);
  expect(failure?.stderr).toMatch(/seed -?\d+/);
}, 60_000);
