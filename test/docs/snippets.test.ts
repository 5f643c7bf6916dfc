/**
 * The documentation's code cannot rot: every TypeScript block of the docs and the README compiles against
 * the built package (scripts/docs/check-snippets.mjs, which `npm run docs:build` runs too), and the check
 * itself fails on a block that would not compile, at the page's line.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { checkSnippets } from '../../scripts/docs/check-snippets.mjs';
import { documentationFiles, extractBlocks, visibleCode } from '../../scripts/docs/snippets.mjs';
import { assertBuilt, repoPath } from '../support/paths.js';

describe('the documentation', () => {
  test('every TypeScript block of every page compiles against dist/', async () => {
    assertBuilt();
    const { blocks, errors } = await checkSnippets();
    expect(errors.map(({ page, line, message }) => `${page}:${line}: ${message}`)).toEqual([]);
    // The pages hold 80 blocks (November 2026); far fewer means the scanner lost them.
    expect(blocks).toBeGreaterThanOrEqual(80);
    expect(documentationFiles()).toContain('docs/stores/dynamodb.md');
  }, 120_000);

  test("AGENTS.md's blocks are in the check, and compile as written (no hidden lines)", async () => {
    assertBuilt();
    const { blocks, errors } = await checkSnippets({ pages: ['AGENTS.md'] });
    expect(errors).toEqual([]);
    // Five blocks (November 2026): one per decision that has code, and the test.
    expect(blocks).toBeGreaterThanOrEqual(5);
  }, 60_000);
});

describe('the snippet check', () => {
  const dir = mkdtempSync(join(repoPath(), '.docs-snippets-test-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('reports a block that does not compile at its line, and takes hidden lines into account', async () => {
    const page = join(dir, 'page.md');
    writeFileSync(
      page,
      [
        '# A page',
        '',
        '```ts',
        'declare function sendWelcomeMail(email: string): Promise<void>;',
        '// ---cut---',
        "import { createWebhooks } from 'service-webhooks';",
        "const webhooks = createWebhooks({ secret: 'whsec_x' });",
        "webhooks.on('user.created', (event) => sendWelcomeMail(event.data.email));",
        '```',
        '',
        '```ts',
        "import { createWebhooks } from 'service-webhooks';",
        "createWebhooks({ secret: 'whsec_x' }).on('user.created', (event) => event.data.nope);",
        '```',
      ].join('\n'),
    );
    const { blocks, errors } = await checkSnippets({ pages: [page] });
    expect(blocks).toBe(2);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ page, line: 13 });
    expect(errors[0]?.message).toMatch(/nope/);
  }, 60_000);

  test("a block that augments the package's types is compiled apart, so no other block leans on it", async () => {
    const page = join(dir, 'augmenting.md');
    writeFileSync(
      page,
      [
        '```ts',
        "import { createWebhooks } from 'service-webhooks';",
        "declare module 'service-webhooks' {",
        '  interface PaymentData { amount: number }',
        '}',
        "createWebhooks({ secret: 'whsec_x' }).on('payment.succeeded', (event) => event.data.amount);",
        '```',
        '',
        '```ts',
        "import { createWebhooks } from 'service-webhooks';",
        "createWebhooks({ secret: 'whsec_x' }).on('payment.succeeded', (event) => event.data.amount);",
        '```',
      ].join('\n'),
    );
    const { blocks, errors } = await checkSnippets({ pages: [page] });
    expect(blocks).toBe(2);
    expect(errors.map(({ line, message }) => ({ line, amount: /amount/.test(message) }))).toEqual([
      { line: 11, amount: true },
    ]);
  }, 60_000);

  test('blocks are found with their language, run marker and visible part', () => {
    const blocks = extractBlocks(
      [
        '<!-- run: recipe -->',
        '```ts {2}',
        'const hidden = 1;',
        '// ---cut---',
        'hidden;',
        '```',
        '',
        '```sh',
        'npm start',
        '```',
      ].join('\n'),
    );
    expect(blocks.map(({ lang, id, line }) => ({ lang, id, line }))).toEqual([
      { lang: 'ts', id: 'recipe', line: 3 },
      { lang: 'sh', id: undefined, line: 9 },
    ]);
    expect(visibleCode(blocks[0]?.code ?? '')).toBe('hidden;');
  });
});
