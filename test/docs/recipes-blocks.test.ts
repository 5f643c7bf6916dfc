/**
 * The recipes' runnable blocks, run as a reader runs them, each asserting what its page promises:
 * docs/recipes/secret-rotation.md (a retry signed with the new secret is a duplicate of the delivery
 * the old one signed), docs/recipes/several-registrations.md (one event, two registrations on one
 * store: each runs it once, each retry is a duplicate) and docs/recipes/testing-handlers.md (the vitest
 * file passes under vitest, against the built package, as in a reader's project).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, repoPath } from '../support/paths.js';
import { docBlock, runNode, writeRunnable } from './support.js';

const execFileAsync = promisify(execFile);

beforeAll(() => {
  assertBuilt('index.js', 'testing.js');
});

describe('docs/recipes/secret-rotation.md', () => {
  it('rotation-overlap: the old secret signs the first delivery (index 1), the retry signed with the new one is a duplicate', async () => {
    const file = await writeRunnable(
      docBlock('docs/recipes/secret-rotation.md', 'rotation-overlap'),
      'recipes-rotation-overlap',
    );
    const { stdout } = await runNode(file);
    const handled = stdout.split('\n').filter((line) => line.startsWith('handled '));
    expect(handled).toHaveLength(1);
    expect(handled[0]).toMatch(/^handled evt_\w+, signed with secret 1$/);
    expect(stdout).toContain('first: 200, retry: 200 duplicate=true');
  });
});

describe('docs/recipes/several-registrations.md', () => {
  it('two-registrations: each registration runs the shared event id once; each retry is a duplicate', async () => {
    const file = await writeRunnable(
      docBlock('docs/recipes/several-registrations.md', 'two-registrations'),
      'recipes-two-registrations',
    );
    const { stdout, stderr } = await runNode(file);
    const lines = stdout.trim().split('\n');
    const id = /^billing handled (evt_\w+)$/.exec(lines[0] ?? '')?.[1];
    expect(id).toBeDefined();
    expect(lines).toEqual([
      `billing handled ${id}`,
      'billing: 200 duplicate=no',
      `crm handled ${id}`,
      'crm: 200 duplicate=no',
      'billing: 200 duplicate=true',
      'crm: 200 duplicate=true',
    ]);
    // Own secrets: no shared-scope warning.
    expect(stderr).not.toContain('share one store');
  });
});

describe('docs/recipes/testing-handlers.md', () => {
  it('vitest-example: the page’s test file passes under vitest, against the built package', async () => {
    // A folder of its own, so vitest finds this one test file and nothing else.
    mkdirSync(repoPath('.docs-snippets', 'run', 'recipes-testing-handlers'), { recursive: true });
    const file = await writeRunnable(
      docBlock('docs/recipes/testing-handlers.md', 'vitest-example'),
      'recipes-testing-handlers/receiver.test',
    );
    const dir = dirname(file);
    // A config of its own, so the repository's (its tiers, its aliases to the sources) is not used:
    // 'service-webhooks' resolves to dist/ as in a reader's project.
    const config = join(dir, 'vitest.config.mjs');
    writeFileSync(config, "export default { test: { include: ['*.test.mjs'] } };\n");
    const report = join(dir, 'report.json');
    await execFileAsync(
      process.execPath,
      [
        repoPath('node_modules', 'vitest', 'vitest.mjs'),
        'run',
        '--config',
        config,
        '--root',
        dir,
        '--reporter=json',
        `--outputFile=${report}`,
      ],
      { cwd: dir, timeout: 120_000, env: { ...process.env, FORCE_COLOR: '0' } },
    );
    const { default: result } = await import(report, { with: { type: 'json' } });
    const tests = (result as { testResults: { assertionResults: { title: string; status: string }[] }[] })
      .testResults[0]!.assertionResults;
    expect(tests.map((test) => [test.title, test.status])).toEqual([
      ['a payment is handled once, its retry is a duplicate', 'passed'],
      ['a failing handler is answered 500, so the service retries', 'passed'],
      ['a forged signature is refused before any handler runs', 'passed'],
    ]);
  });
});
