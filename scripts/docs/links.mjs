/**
 * Check every link of the built site: a page or file under the site's base must exist and, with a
 * `#fragment`, hold an element of that id (VitePress checks pages, not anchors); a link into this
 * repository on GitHub (…/blob/main/<path>, …/tree/main/<path>) must name a path that exists in the
 * checkout. Other external links are not fetched (CI has no network but the registries).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { ROOT } from './snippets.mjs';

const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
/** The repository on GitHub, from package.json's `repository` (the one place it is written). */
export const REPOSITORY = manifest.repository.url.replace(/^git\+/, '').replace(/\.git$/, '');

const htmlFiles = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return htmlFiles(path);
    return entry.name.endsWith('.html') ? [path] : [];
  });

const decode = (text) => text.replaceAll('&amp;', '&').replaceAll('&quot;', '"').replaceAll('&#39;', "'");

/**
 * @param {{ outDir: string, base: string }} site
 * @returns {{ links: number, broken: { page: string, href: string, reason: string }[] }}
 */
export function checkLinks({ outDir, base }) {
  const ids = new Map();
  const idsOf = (file) => {
    if (!ids.has(file)) {
      const html = readFileSync(file, 'utf8');
      ids.set(file, new Set([...html.matchAll(/\sid="([^"]+)"/g)].map((match) => decode(match[1]))));
    }
    return ids.get(file);
  };
  const broken = [];
  let links = 0;
  for (const file of htmlFiles(outDir)) {
    const html = readFileSync(file, 'utf8');
    const page = relative(outDir, file).split(sep).join('/');
    for (const [, raw] of html.matchAll(/\shref="([^"]*)"/g)) {
      const href = decode(raw);
      if (href.startsWith(`${REPOSITORY}/blob/main/`) || href.startsWith(`${REPOSITORY}/tree/main/`)) {
        links++;
        const path = href.replace(/^.*?\/(?:blob|tree)\/main\//, '').split('#')[0];
        if (!existsSync(join(ROOT, decodeURIComponent(path)))) {
          broken.push({ page, href, reason: 'no such path in the repository' });
        }
        continue;
      }
      if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//')) continue;
      links++;
      const [pathPart, fragment] = href.split('#');
      let target;
      if (pathPart === '') target = file;
      else if (pathPart.startsWith('/')) {
        if (!pathPart.startsWith(base)) {
          broken.push({ page, href, reason: `outside the site's base ${base}` });
          continue;
        }
        target = join(outDir, decodeURIComponent(pathPart.slice(base.length)));
      } else target = resolve(dirname(file), decodeURIComponent(pathPart));
      if (existsSync(target) && statSync(target).isDirectory()) target = join(target, 'index.html');
      if (!existsSync(target)) {
        broken.push({ page, href, reason: 'no such page or file' });
        continue;
      }
      if (fragment && target.endsWith('.html') && !idsOf(target).has(decodeURIComponent(fragment))) {
        broken.push({ page, href, reason: `no element with id "${fragment}"` });
      }
    }
  }
  checkReadmeLinks({ outDir, broken, count: () => links++ });
  return { links, broken };
}

/** The published site, package.json's `homepage`: its origin, and the path it is served under. */
export const HOMEPAGE = manifest.homepage;
export const SITE = new URL(HOMEPAGE).origin;
export const SITE_BASE = new URL(HOMEPAGE).pathname;

/**
 * The README's links, which GitHub and npm show: a link to the site must reach a built page (and its
 * anchor), a relative link a path in the checkout, a link into the repository a path that exists.
 */
function checkReadmeLinks({ outDir, broken, count }) {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  // The README links to the published site (package.json's homepage), whatever base this build has.
  const siteRoot = HOMEPAGE;
  for (const [, href] of readme.matchAll(/\]\(([^)\s]+)\)/g)) {
    count();
    const [pathPart, fragment] = href.split('#');
    if (href.startsWith(siteRoot)) {
      let target = join(outDir, decodeURIComponent(pathPart.slice(siteRoot.length)));
      if (existsSync(target) && statSync(target).isDirectory()) target = join(target, 'index.html');
      if (!existsSync(target)) broken.push({ page: 'README.md', href, reason: 'no such page on the site' });
      else if (
        fragment &&
        !new Set([...readFileSync(target, 'utf8').matchAll(/\sid="([^"]+)"/g)].map((m) => m[1])).has(fragment)
      ) {
        broken.push({ page: 'README.md', href, reason: `no element with id "${fragment}"` });
      }
    } else if (href.startsWith(`${REPOSITORY}/blob/main/`) || href.startsWith(`${REPOSITORY}/tree/main/`)) {
      const path = pathPart.replace(/^.*?\/(?:blob|tree)\/main\//, '');
      if (!existsSync(join(ROOT, path)))
        broken.push({ page: 'README.md', href, reason: 'no such path in the repository' });
    } else if (!/^[a-z][a-z0-9+.-]*:/i.test(href) && pathPart !== '') {
      if (!existsSync(join(ROOT, decodeURIComponent(pathPart)))) {
        broken.push({ page: 'README.md', href, reason: 'no such path in the repository' });
      }
    }
  }
}
