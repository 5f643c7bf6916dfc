/**
 * The code blocks of the documentation (docs/**\/*.md and README.md), found by a line scanner rather than
 * a Markdown parser so the docs site, the snippet check and the tests that run a block all read blocks
 * the same way, with no dependency.
 *
 * Conventions a page follows (docs/contributing.md says them for writers):
 * - Every `ts` block is a module of its own that compiles against the built package (`service-webhooks`
 *   resolves to dist/ through the package's own `exports`, as in a user's project).
 * - Lines above a `// ---cut---` line are compiled but not shown: the declarations a snippet leans on
 *   (`declare const db: …`) without distracting the reader. The site and llms.txt show what is below.
 * - `<!-- run: some-id -->` on the line before a block names it, so a test can run it (`docBlock`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const DOCS = join(ROOT, 'docs');
/** The marker that hides what is above it. */
export const CUT = '// ---cut---';
/** Languages compiled by the snippet check. */
export const TYPESCRIPT_LANGUAGES = new Set(['ts', 'typescript', 'mts', 'cts']);

/** Generated or installed folders of docs/ that hold no hand-written page. */
const NOT_PAGES = new Set(['node_modules', 'api', '.vitepress', 'public']);

/** The hand-written pages: docs/**\/*.md (not the generated API reference) and README.md, as paths from the root. */
export function documentationFiles() {
  const pages = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (NOT_PAGES.has(entry.name) && dir === DOCS) continue;
      if (entry.name === 'node_modules') continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) pages.push(relative(ROOT, path).split(sep).join('/'));
    }
  };
  walk(DOCS);
  return ['README.md', ...pages.sort()];
}

/**
 * Every fenced block of one Markdown text: its language, the rest of its info string, its code, the
 * 1-based line of its first code line, and the `run:` id written just before it.
 * @param {string} markdown
 * @returns {{ lang: string, meta: string, code: string, line: number, id: string | undefined }[]}
 */
export function extractBlocks(markdown) {
  const lines = markdown.split('\n');
  const blocks = [];
  for (let index = 0; index < lines.length; index++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)(.*)$/.exec(lines[index]);
    if (!open) continue;
    const [, indent, fence, lang, meta] = open;
    let previous = index - 1;
    while (previous >= 0 && lines[previous].trim() === '') previous--;
    const marker = previous >= 0 ? /^\s*<!--\s*run:\s*([\w-]+)\s*-->\s*$/.exec(lines[previous]) : null;
    const body = [];
    let end = index + 1;
    for (; end < lines.length; end++) {
      const line = lines[end];
      if (
        line.trimStart().startsWith(fence[0].repeat(fence.length)) &&
        line.trim().replace(/[`~]/g, '') === ''
      )
        break;
      body.push(line.startsWith(indent) ? line.slice(indent.length) : line.trimStart());
    }
    blocks.push({ lang, meta: meta.trim(), code: body.join('\n'), line: index + 2, id: marker?.[1] });
    index = end;
  }
  return blocks;
}

/** What a reader sees of a block: the lines below its `// ---cut---`, or all of it. */
export function visibleCode(code) {
  const lines = code.split('\n');
  const cut = lines.findIndex((line) => line.trim() === CUT);
  return cut === -1 ? code : lines.slice(cut + 1).join('\n');
}

/**
 * The block a page names with `<!-- run: id -->`, whole (hidden lines included), for a test to run.
 * @param {string} page a path from the root, e.g. 'docs/stores/dynamodb.md'
 * @param {string} id
 */
export function docBlock(page, id) {
  const blocks = extractBlocks(readFileSync(join(ROOT, page), 'utf8')).filter((block) => block.id === id);
  if (blocks.length !== 1) {
    throw new Error(`${page} has ${blocks.length} blocks marked <!-- run: ${id} --> (expected one).`);
  }
  return blocks[0];
}
