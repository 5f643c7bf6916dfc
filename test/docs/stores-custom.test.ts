/**
 * docs/stores/custom.md's example store, run as a reader runs it (in a project made as Getting started
 * says, with fast-check installed as the page says, the packed build for service-webhooks; saved and
 * run as the page says): checkStore finds no violation in it, and the bug the page suggests introducing
 * (a lease counted as ended early) is caught, under rule 1.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { commandOnPage, docBlock, gettingStartedProject, type ReaderProject } from './support.js';

const PAGE = 'docs/stores/custom.md';
const EXACT = 'if (row !== undefined && row.expiresAt > now) return [row.state, row];';
const EARLY = 'if (row !== undefined && row.expiresAt > now + 1) return [row.state, row];';

let project: ReaderProject;

beforeAll(async () => {
  project = await gettingStartedProject(
    'stores-custom',
    commandOnPage(PAGE, 'npm install --save-dev fast-check'),
  );
}, 180_000);

afterAll(() => {
  project?.remove();
});

test('the example MapStore passes checkStore on the virtual clock', async () => {
  project.save(docBlock(PAGE, 'custom-store-check'), 'map-store.ts');
  const { stdout } = await project.shell(commandOnPage(PAGE, 'npx tsx map-store.ts'), { HISTORIES: '1000' });
  expect(stdout).toMatch(/^MapStore: 1000 histories, \d+ calls, no violation \(seed -?\d+\)$/m);
}, 60_000);

test('with the lease counted as ended early, as the page suggests, checkStore reports rule 1', async () => {
  const block = docBlock(PAGE, 'custom-store-check');
  expect(block.code).toContain(EXACT);
  project.save({ ...block, code: block.code.replace(EXACT, EARLY) }, 'map-store-early.ts');
  const failure = await project.shell('npx tsx map-store-early.ts', { HISTORIES: '1000' }).then(
    () => undefined,
    (error: { stderr: string }) => error,
  );
  expect(failure?.stderr).toMatch(/rule 1: /);
  expect(failure?.stderr).toMatch(/seed -?\d+/);
}, 60_000);
