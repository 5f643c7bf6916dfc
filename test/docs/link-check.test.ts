/**
 * The docs build's link check (scripts/docs/links.mjs) on a small built site: it must report a page
 * that does not exist, an anchor no element has, a link out of the site's base, and a repository path
 * the checkout lacks, and pass the links that are fine. `npm run docs:build` runs it on the real site.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { checkLinks, REPOSITORY } from '../../scripts/docs/links.mjs';

const outDir = mkdtempSync(join(tmpdir(), 'docs-links-'));
afterAll(() => rmSync(outDir, { recursive: true, force: true }));

test('reports missing pages, anchors and repository paths, and passes the rest', () => {
  mkdirSync(join(outDir, 'guide'));
  writeFileSync(join(outDir, 'index.html'), '<h1 id="top">Home</h1>');
  writeFileSync(join(outDir, 'guide', 'options.html'), '<h2 id="namespace">namespace</h2>');
  const links = [
    '/base/guide/options.html#namespace',
    'options.html#namespace',
    '#top-of-nothing',
    '/base/guide/missing.html',
    '/base/guide/options.html#no-such-option',
    '/elsewhere/page.html',
    `${REPOSITORY}/blob/main/package.json`,
    `${REPOSITORY}/tree/main/examples/no-such-example`,
    'https://example.com/not-fetched',
  ];
  writeFileSync(
    join(outDir, 'guide', 'index.html'),
    `<main id="main">${links.map((href) => `<a href="${href}">x</a>`).join('')}</main>`,
  );
  const { broken } = checkLinks({ outDir, base: '/base/' });
  const fromGuide = broken.filter(({ page }) => page === 'guide/index.html');
  expect(fromGuide.map(({ href, reason }) => [href, reason])).toEqual([
    ['#top-of-nothing', 'no element with id "top-of-nothing"'],
    ['/base/guide/missing.html', 'no such page or file'],
    ['/base/guide/options.html#no-such-option', 'no element with id "no-such-option"'],
    ['/elsewhere/page.html', "outside the site's base /base/"],
    [`${REPOSITORY}/tree/main/examples/no-such-example`, 'no such path in the repository'],
  ]);
});
