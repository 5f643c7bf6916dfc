/**
 * `npm run docs:build` (and `docs:dev` with --dev): the docs site from the repository, in this order, each
 * step failing the whole on an error:
 * 1. install the site's own tools (docs/package.json, its lockfile) when they are missing or changed, so a
 *    receiver's `npm install` never carries them (a side install, scripts/side-install.ts: hence tsx);
 * 2. compile every TypeScript block of the pages against the built package (scripts/docs/check-snippets.mjs),
 *    unless DOCS_SNIPPETS_CHECKED_ELSEWHERE=1 says the run that builds the site runs that same check
 *    (test/docs/snippets.test.ts) itself: `.ci/run` does, and compiling the pages twice cost it 49 s;
 * 3. generate the API reference from the TSDoc into docs/api (TypeDoc, one module per public subpath);
 * 4. render the diagrams (scripts/docs/diagrams.mjs);
 * 5. build the site with VitePress (dead page links fail it), then write llms.txt, llms-full.txt and each
 *    page as Markdown, and check every link, anchors and repository paths included.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { subpaths } from '../../subpaths.mjs';
import { ensureSideInstall } from '../side-install.ts';
import { apiIndex } from './api-index.mjs';
import { checkSnippets } from './check-snippets.mjs';
import { renderDiagrams } from './diagrams.mjs';
import { checkLinks, REPOSITORY, SITE, SITE_BASE } from './links.mjs';
import { writeLlmsFiles } from './llms.mjs';
import { DOCS, ROOT } from './snippets.mjs';

const dev = process.argv.includes('--dev');
const base = process.env.DOCS_BASE ?? SITE_BASE;
const siteUrl = `${SITE}${base}`;
const outDir = join(DOCS, '.vitepress', 'dist');
const bin = (name) => join(DOCS, 'node_modules', '.bin', name);

const started = performance.now();
const say = (message) =>
  console.log(`docs: ${message} (${((performance.now() - started) / 1000).toFixed(1)} s)`);

/** The site's own tools, a side install (scripts/side-install.ts) from docs/package-lock.json. */
export const DOCS_TOOLS = {
  dir: DOCS,
  label: "the docs site's tools (VitePress, TypeDoc, Mermaid)",
  byHand: 'npm run docs:build',
};

export function generateApiReference() {
  rmSync(join(DOCS, 'api'), { recursive: true, force: true });
  const options = join(DOCS, '.vitepress', 'cache-typedoc.json');
  writeFileSync(
    options,
    JSON.stringify({
      entryPoints: Object.values(subpaths).map((source) => join(ROOT, source)),
      tsconfig: join(ROOT, 'tsconfig.json'),
      // The program is type-checked by `npm run typecheck`; here only its declarations are read.
      skipErrorChecking: true,
      disableGit: true,
      basePath: ROOT,
      sourceLinkTemplate: `${REPOSITORY}/blob/main/{path}#L{line}`,
      plugin: [
        'typedoc-plugin-markdown',
        'typedoc-vitepress-theme',
        join(DOCS, '.vitepress', 'typedoc-subpaths.mjs'),
      ],
      out: join(DOCS, 'api'),
      docsRoot: DOCS,
      readme: 'none',
      entryFileName: 'index',
      excludePrivate: true,
      excludeInternal: true,
      excludeExternals: true,
      hidePageHeader: true,
      useCodeBlocks: true,
      parametersFormat: 'table',
      sidebar: { pretty: true },
      // Each module is named as users import it (`service-webhooks/redis`), not by its source file.
      name: 'API reference',
      // The adapters' shared (req, res, next?) listener type is internal: NodeWebhookHandler is its public name.
      intentionallyNotExported: ['NodeListener'],
      logLevel: 'Warn',
      // A TSDoc link to nothing, or a public type the reference cannot show, fails the build.
      treatWarningsAsErrors: true,
    }),
  );
  execFileSync(bin('typedoc'), ['--options', options], { cwd: ROOT, stdio: 'inherit' });
  rmSync(options);
  // TypeDoc's front page lists the module names only: one sentence each, grouped as the guide is.
  const index = join(DOCS, 'api', 'index.md');
  writeFileSync(index, apiIndex(readFileSync(index, 'utf8')));
}

const run = (args) =>
  new Promise((resolve, reject) => {
    const child = spawn(bin('vitepress'), args, {
      cwd: ROOT,
      stdio: 'inherit',
      env: { ...process.env, DOCS_BASE: base },
    });
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`vitepress ${args[0]} exited with ${code}`)),
    );
  });

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await ensureSideInstall(DOCS_TOOLS);
  if (dev) {
    // The writer's loop: the blocks are checked by the docs tests (test/docs/snippets.test.ts).
  } else if (process.env.DOCS_SNIPPETS_CHECKED_ELSEWHERE === '1') {
    say(
      'TypeScript blocks: compiled by test/docs/snippets.test.ts in this run (DOCS_SNIPPETS_CHECKED_ELSEWHERE=1)',
    );
  } else {
    const { blocks, errors } = await checkSnippets();
    if (errors.length > 0) {
      for (const { page, line, message } of errors) console.error(`${page}:${line}: ${message}`);
      throw new Error(`${errors.length} error(s) in the documentation's TypeScript blocks.`);
    }
    say(`${blocks} TypeScript blocks compile against the built package`);
  }
  generateApiReference();
  say('API reference generated from the TSDoc');
  const diagrams = await renderDiagrams();
  say(`${diagrams.diagrams} diagrams (${diagrams.rendered} rendered now)`);
  if (dev) {
    await run(['dev', 'docs']);
  } else {
    await run(['build', 'docs']);
    say('site built');
    const llms = writeLlmsFiles({ outDir, siteUrl });
    say(`llms.txt, llms-full.txt and ${llms.pages + llms.apiPages} pages as Markdown`);
    const { links, broken } = checkLinks({ outDir, base });
    for (const { page, href, reason } of broken) console.error(`${page}: ${href}: ${reason}`);
    if (broken.length > 0) throw new Error(`${broken.length} broken link(s) of ${links}.`);
    say(`${links} links checked; the site is in docs/.vitepress/dist`);
  }
}
