/**
 * The docs site (VitePress): pages are docs/**\/*.md, the API reference is generated into docs/api by
 * TypeDoc from the TSDoc, diagrams are rendered to SVG before the build (scripts/docs/diagrams.mjs),
 * and llms.txt with a Markdown copy of each page is written after it (scripts/docs/llms.mjs).
 * `npm run docs:build` runs all of it; `npm run docs:dev` serves it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type DefaultTheme, defineConfig } from 'vitepress';
import { diagramFileName, diagramTitle } from '../../scripts/docs/diagram-names.mjs';
import { REPOSITORY, SITE_BASE } from '../../scripts/docs/links.mjs';
import { CUT } from '../../scripts/docs/snippets.mjs';
import { guide } from './sidebar.mjs';

/** Served under package.json's homepage path (GitHub Pages: the repository's name); DOCS_BASE=/ for a site of its own. */
const base = process.env.DOCS_BASE ?? SITE_BASE;

const apiSidebarFile = fileURLToPath(new URL('../api/typedoc-sidebar.json', import.meta.url));
const apiSidebar: DefaultTheme.SidebarItem[] = existsSync(apiSidebarFile)
  ? JSON.parse(readFileSync(apiSidebarFile, 'utf8'))
  : [];

export default defineConfig({
  title: 'service-webhooks',
  description:
    "Receive the service's webhooks safely: verified over the raw bytes, deduplicated by event id, routed to typed handlers.",
  base,
  lang: 'en',
  cleanUrls: false,
  lastUpdated: false,
  srcExclude: ['**/node_modules/**', 'package.json'],
  // A page that links to a page that does not exist fails the build (the link check after it also
  // checks anchors and repository paths).
  ignoreDeadLinks: false,
  head: [['meta', { name: 'theme-color', content: '#3c8772' }]],
  themeConfig: {
    nav: [
      { text: 'Guide', link: '/guide/getting-started' },
      { text: 'Stores', link: '/stores/' },
      { text: 'Inbox', link: '/inbox/' },
      { text: 'API', link: '/api/' },
      { text: 'Changelog', link: `${REPOSITORY}/blob/main/CHANGELOG.md` },
    ],
    sidebar: {
      '/api/': [{ text: 'API reference', link: '/api/', items: apiSidebar }],
      '/': guide,
    },
    socialLinks: [{ icon: 'github', link: REPOSITORY }],
    editLink: { pattern: `${REPOSITORY}/edit/main/docs/:path`, text: 'Edit this page' },
    search: { provider: 'local' },
    outline: [2, 3],
  },
  markdown: {
    config(md) {
      const fence = md.renderer.rules.fence!;
      md.renderer.rules.fence = (tokens, index, options, env, self) => {
        const token = tokens[index];
        const lang = token.info.trim().split(/\s+/)[0];
        if (lang === 'mermaid') {
          // Rendered to SVG before the build (no diagram library in the reader's browser).
          const title = diagramTitle(token.content);
          // A path in docs/public: Vite resolves it and adds the base.
          const src = `/diagrams/${diagramFileName(token.content)}`;
          return `<figure class="diagram"><img src="${src}" alt="${md.utils.escapeHtml(title)}" loading="lazy"></figure>\n`;
        }
        const lines = token.content.split('\n');
        const cut = lines.findIndex((line) => line.trim() === CUT);
        if (cut !== -1) token.content = lines.slice(cut + 1).join('\n');
        return fence(tokens, index, options, env, self);
      };
    },
  },
});
