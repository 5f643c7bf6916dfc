/**
 * Render every ```mermaid block of the docs to an SVG in docs/public/diagrams/, before VitePress builds,
 * so readers get a plain image (no 2 MB diagram library in their browser) and a broken diagram fails
 * the build rather than a reader's page. Mermaid lays text out with the browser's font metrics, so it
 * runs in Chromium (Debian's `chromium`, driven by playwright-core); an SVG already rendered for the
 * same text is kept.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { diagramFileName, diagramTitle } from './diagram-names.mjs';
import { DOCS, documentationFiles, extractBlocks, ROOT } from './snippets.mjs';

const OUT = join(DOCS, 'public', 'diagrams');
const CHROMIUM_CANDIDATES = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'];

/** Render the diagrams not rendered yet; resolves to how many there are and how many were rendered. */
export async function renderDiagrams() {
  const diagrams = new Map();
  for (const page of documentationFiles()) {
    if (page === 'README.md') continue;
    for (const block of extractBlocks(readFileSync(join(ROOT, page), 'utf8'))) {
      if (block.lang !== 'mermaid') continue;
      diagramTitle(block.code);
      diagrams.set(diagramFileName(block.code), { page, code: block.code });
    }
  }
  mkdirSync(OUT, { recursive: true });
  // SVGs of diagrams edited or removed since: the site would ship them otherwise.
  for (const file of readdirSync(OUT)) if (!diagrams.has(file)) rmSync(join(OUT, file));
  const missing = [...diagrams].filter(([name]) => !existsSync(join(OUT, name)));
  if (missing.length === 0) return { diagrams: diagrams.size, rendered: 0 };

  const executablePath = CHROMIUM_CANDIDATES.find((path) => path && existsSync(path));
  if (!executablePath) {
    throw new Error(
      'The docs render their diagrams in Chromium: install it (Debian: `apt-get install chromium`) or set CHROMIUM_PATH.',
    );
  }
  const { chromium } = createRequire(join(ROOT, 'package.json'))('playwright-core');
  const mermaidScript = join(DOCS, 'node_modules', 'mermaid', 'dist', 'mermaid.min.js');
  const browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
  try {
    const page = await browser.newPage();
    await page.setContent('<!doctype html><html><body></body></html>');
    await page.addScriptTag({ path: mermaidScript });
    await page.evaluate(() =>
      // Labels as SVG text, not HTML in foreignObject: the SVG is shown through <img>, which renders
      // no foreign HTML in some browsers.
      globalThis.mermaid.initialize({
        startOnLoad: false,
        theme: 'neutral',
        securityLevel: 'strict',
        htmlLabels: false,
        flowchart: { htmlLabels: false },
        fontFamily: 'ui-sans-serif, system-ui, sans-serif',
      }),
    );
    for (const [name, { page: source, code }] of missing) {
      try {
        const svg = await page.evaluate(
          async ([id, text]) => (await globalThis.mermaid.render(id, text)).svg,
          [`diagram-${name.slice(0, 8)}`, code],
        );
        writeFileSync(join(OUT, name), svg);
      } catch (error) {
        throw new Error(`A diagram in ${source} does not render: ${error.message}`);
      }
    }
  } finally {
    await browser.close();
  }
  return { diagrams: diagrams.size, rendered: missing.length };
}
