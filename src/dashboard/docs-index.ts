/**
 * The documentation's Markdown pages as the dev server's MCP tools search and read them: the copies the
 * build writes to dist/docs (shipped in the package), or a clone's docs/ folder.
 *
 * @packageDocumentation
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';

/** One page: its path under the docs folder (`guide/options.md`), its title and its text. */
export interface DocsPage {
  readonly path: string;
  readonly title: string;
  readonly text: string;
}

/** A page that matched a search, with the lines that matched. */
export interface DocsHit {
  readonly path: string;
  readonly title: string;
  readonly score: number;
  /** Up to three short passages around the matches, each with the section it is in. */
  readonly excerpts: readonly { readonly section: string; readonly text: string }[];
}

/** Folders of docs/ that hold no hand-written page (the site's build, the generated API reference). */
const NOT_PAGES = new Set(['node_modules', '.vitepress', 'public', 'api']);
/** The marker above which a snippet's lines are compiled but not shown (see scripts/docs/snippets.mjs). */
const CUT = '// ---cut---';
const EXCERPTS = 3;
const EXCERPT_CHARS = 300;

/**
 * The pages of one docs folder, read once on first use: a dev server that never searches never
 * reads them.
 *
 * @example
 * ```ts
 * const docs = new DocsIndex('dist/docs');
 * const [best] = await docs.search('rotate the secret');
 * console.log(best?.path); // recipes/secret-rotation.md
 * ```
 */
export class DocsIndex {
  readonly #folder: string | undefined;
  #pages: Promise<Map<string, DocsPage>> | undefined;

  /** `folder` holds the pages; without one, there are none (a search finds nothing). */
  constructor(folder: string | undefined) {
    this.#folder = folder;
  }

  /** Every page, by path; empty when the folder does not exist (a build without the copies). */
  pages(): Promise<Map<string, DocsPage>> {
    this.#pages ??= this.#folder === undefined ? Promise.resolve(new Map()) : loadPages(this.#folder);
    return this.#pages;
  }

  /** The page at `path` (as {@link DocsIndex.search} names it), or `undefined`. */
  async read(path: string): Promise<DocsPage | undefined> {
    return (await this.pages()).get(path.replace(/^\/+/, ''));
  }

  /**
   * The pages that best match `query`'s words, best first: a word in the title counts most, then in a
   * heading, then in the text; a page holding every word ranks above one that holds some.
   */
  async search(query: string, limit = 5): Promise<DocsHit[]> {
    const words = [...new Set(query.toLowerCase().match(/[\p{L}\p{N}_.-]{2,}/gu) ?? [])];
    if (words.length === 0) return [];
    const hits: DocsHit[] = [];
    for (const page of (await this.pages()).values()) {
      const lower = page.text.toLowerCase();
      const headings = page.text
        .split('\n')
        .filter((line) => line.startsWith('#'))
        .join('\n')
        .toLowerCase();
      let score = 0;
      let found = 0;
      for (const word of words) {
        const inText = count(lower, word);
        if (inText === 0) continue;
        found++;
        score += Math.min(inText, 10) + 3 * count(headings, word) + 5 * count(page.title.toLowerCase(), word);
      }
      if (found === 0) continue;
      score *= found === words.length ? 2 : found / words.length;
      hits.push({
        path: page.path,
        title: page.title,
        score: Math.round(score),
        excerpts: excerpts(page, words),
      });
    }
    return hits.sort((a, b) => b.score - a.score || a.path.localeCompare(b.path)).slice(0, limit);
  }
}

async function loadPages(folder: string): Promise<Map<string, DocsPage>> {
  const pages = new Map<string, DocsPage>();
  const walk = async (dir: string): Promise<void> => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (entry.isDirectory()) {
        if (!NOT_PAGES.has(entry.name)) await walk(join(dir, entry.name));
      } else if (entry.name.endsWith('.md')) {
        const path = relative(folder, join(dir, entry.name)).split(sep).join('/');
        const text = readerText(await readFile(join(dir, entry.name), 'utf8'));
        pages.set(path, { path, title: /^#\s+(.+)$/m.exec(text)?.[1]?.trim() ?? path, text });
      }
    }
  };
  await walk(folder);
  return pages;
}

/**
 * The page as a reader gets it: no front matter, and no snippet lines above a `// ---cut---` (a clone's
 * docs/ has them; the build's copies are already without).
 */
export function readerText(markdown: string): string {
  const body = markdown.replace(/^---\n[\s\S]*?\n---\n/, '');
  const lines = body.split('\n');
  const kept: string[] = [];
  let blockStart = -1;
  for (const line of lines) {
    if (/^\s*(`{3,}|~{3,})/.test(line)) blockStart = blockStart === -1 ? kept.length + 1 : -1;
    if (blockStart !== -1 && line.trim() === CUT) {
      kept.length = blockStart;
      continue;
    }
    kept.push(line);
  }
  return kept.join('\n').trim();
}

function count(text: string, word: string): number {
  let found = 0;
  for (let at = text.indexOf(word); at !== -1; at = text.indexOf(word, at + word.length)) found++;
  return found;
}

function excerpts(page: DocsPage, words: readonly string[]): DocsHit['excerpts'] {
  const found: { section: string; text: string }[] = [];
  let section = page.title;
  const paragraphs = page.text.split(/\n\s*\n/);
  for (const paragraph of paragraphs) {
    const heading = /^#{1,6}\s+(.+)$/m.exec(paragraph);
    if (heading !== null) section = heading[1]!.trim();
    const lower = paragraph.toLowerCase();
    if (!words.some((word) => lower.includes(word))) continue;
    const text = paragraph.trim();
    found.push({ section, text: text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text });
    if (found.length === EXCERPTS) break;
  }
  return found;
}
