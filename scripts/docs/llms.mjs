/**
 * For agents and for readers who want the source: after the site is built, write each page as Markdown
 * beside its HTML (guide/options.html and guide/options.md), llms.txt (an index of the pages with their
 * descriptions, as llmstxt.org proposes) and llms-full.txt (every guide page in one file) at the site's
 * root. Hidden snippet lines (above `// ---cut---`) are left out, as on the site.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { guide } from '../../docs/.vitepress/sidebar.mjs';
import { DOCS, documentationFiles, extractBlocks, ROOT, visibleCode } from './snippets.mjs';

/**
 * The sections of llms.txt and their pages, in the sidebar's reading order (docs/.vitepress/sidebar.mjs),
 * the home page first: [heading, page paths like 'guide/options.md'].
 */
function sections() {
  const pathOf = (link) =>
    `${link.replace(/^\//, '').replace(/\/$/, '/index')}.md`.replace(/^\.md$/, 'index.md');
  return [
    ['Start here', ['index.md']],
    ...guide.map((group) => [group.text, (group.items ?? []).map((item) => pathOf(item.link))]),
  ];
}

/** A page's front matter fields (the flat `key: value` ones) and its body. */
export function splitFrontMatter(markdown) {
  const match = /^---\n([\s\S]*?)\n---\n/.exec(markdown);
  if (!match) return { fields: {}, body: markdown };
  const fields = {};
  for (const line of match[1].split('\n')) {
    const field = /^(\w+):\s*(.*)$/.exec(line);
    if (field) fields[field[1]] = field[2].replace(/^(['"])(.*)\1$/, '$2');
  }
  return { fields, body: markdown.slice(match[0].length) };
}

/** The Markdown a reader of the .md copy gets: no front matter, no hidden snippet lines. */
export function readerMarkdown(markdown) {
  let { body } = splitFrontMatter(markdown);
  for (const block of extractBlocks(body)) {
    const visible = visibleCode(block.code);
    if (visible !== block.code) body = body.replace(block.code, visible);
  }
  return body.trim();
}

const titleOf = (fields, body, fallback) => fields.title ?? /^#\s+(.+)$/m.exec(body)?.[1] ?? fallback;

/**
 * Write the Markdown copies, llms.txt and llms-full.txt into the built site.
 * @param {{ outDir: string, siteUrl: string }} site where the site was built and its public address
 */
export function writeLlmsFiles({ outDir, siteUrl }) {
  const pages = documentationFiles()
    .filter((page) => page !== 'README.md')
    .map((page) => {
      const path = relative('docs', page).split(sep).join('/');
      const markdown = readFileSync(join(ROOT, page), 'utf8');
      const { fields, body } = splitFrontMatter(markdown);
      return { path, fields, body, title: titleOf(fields, body, path), reader: readerMarkdown(markdown) };
    });
  const apiPages = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) apiPages.push(relative(DOCS, path).split(sep).join('/'));
    }
  };
  walk(join(DOCS, 'api'));

  for (const page of pages) {
    mkdirSync(dirname(join(outDir, page.path)), { recursive: true });
    writeFileSync(join(outDir, page.path), `${page.reader}\n`);
  }
  for (const path of apiPages) {
    mkdirSync(dirname(join(outDir, path)), { recursive: true });
    writeFileSync(join(outDir, path), readFileSync(join(DOCS, path)));
  }

  const url = (path) => `${siteUrl}${path}`;
  const home = pages.find((page) => page.path === 'index.md');
  const lines = [
    '# service-webhooks',
    '',
    `> ${home?.fields.description ?? "Receive the service's webhooks safely in TypeScript."}`,
    '',
    'Each page below is Markdown; the same address with .html is the page on the site.',
  ];
  const byPath = new Map(pages.map((page) => [page.path, page]));
  const listed = new Set();
  const ordered = [];
  for (const [heading, paths] of sections()) {
    lines.push('', `## ${heading}`, '');
    for (const path of paths) {
      const page = byPath.get(path);
      if (!page) throw new Error(`The sidebar names ${path}, which docs/ does not have.`);
      listed.add(path);
      ordered.push(page);
      const description = page.fields.description ? `: ${page.fields.description}` : '';
      lines.push(`- [${page.title}](${url(page.path)})${description}`);
    }
  }
  const unlisted = pages.filter((page) => !listed.has(page.path)).map((page) => page.path);
  if (unlisted.length > 0)
    throw new Error(`Pages no sidebar lists (readers could not find them): ${unlisted.join(', ')}`);
  lines.push('', '## Optional', '', `- [Full documentation in one file](${url('llms-full.txt')})`);
  for (const path of apiPages.sort()) {
    const title = /^#\s+(.+)$/m.exec(readFileSync(join(DOCS, path), 'utf8'))?.[1] ?? path;
    lines.push(`- [API: ${title.replace(/[[\]]/g, '')}](${url(path)})`);
  }
  writeFileSync(join(outDir, 'llms.txt'), `${lines.join('\n')}\n`);

  const full = ordered.map((page) => `<!-- ${url(page.path)} -->\n\n${page.reader}\n`).join('\n---\n\n');
  writeFileSync(join(outDir, 'llms-full.txt'), full);
  return { pages: pages.length, apiPages: apiPages.length };
}
