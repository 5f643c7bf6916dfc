#!/usr/bin/env node
/**
 * The docs' Markdown, shipped in the package: every hand-written page of docs/ as a reader gets it (no
 * front matter, no hidden snippet lines; see llms.mjs) into dist/docs/, at the same paths
 * (dist/docs/guide/options.md). AGENTS.md points agents there, and the dev server's MCP tools
 * `search_docs` and `read_doc` read them, so what an agent reads is the version it installed.
 * `npm run build` runs it after tsup; `node scripts/docs/copy-markdown.mjs [outDir]` on its own.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { readerMarkdown } from './llms.mjs';
import { documentationFiles, ROOT } from './snippets.mjs';

/**
 * Write the reader's Markdown of every docs page under `outDir`; answers the pages and their bytes.
 * @param {string} outDir
 * @returns {{ pages: number, bytes: number }}
 */
export function copyDocsMarkdown(outDir = join(ROOT, 'dist', 'docs')) {
  rmSync(outDir, { recursive: true, force: true });
  let bytes = 0;
  const pages = documentationFiles().filter((page) => page !== 'README.md');
  for (const page of pages) {
    const target = join(outDir, relative('docs', page).split(sep).join('/'));
    const text = `${readerMarkdown(readFileSync(join(ROOT, page), 'utf8'))}\n`;
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, text);
    bytes += Buffer.byteLength(text);
  }
  return { pages: pages.length, bytes };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { pages, bytes } = copyDocsMarkdown(
    process.argv[2] === undefined ? undefined : resolve(process.argv[2]),
  );
  console.log(`docs: ${pages} Markdown pages, ${(bytes / 1024).toFixed(0)} KiB, in dist/docs`);
}
