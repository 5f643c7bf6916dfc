/**
 * globalSetup of the package tier (vitest.config.ts): build dist/ once, before any of its tests, with
 * `npm run build`, exactly as a release is built. The unit and integration tiers run on the sources and
 * never build. Set TEST_REUSE_BUILD=1 to keep an existing dist/ while iterating on the tests alone.
 *
 * First it installs the runtimes this tier runs the package on (Bun, Deno, workerd, Next.js), which
 * are not root devDependencies (test/support/runtimes.ts says why); a no-op once they are installed.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { subpaths } from '../../subpaths.mjs';
import { distPath, ROOT, repoPath } from './paths.js';
import { ensureRuntimes } from './runtimes.js';

export default async function setUpPackageTier(): Promise<void> {
  await ensureRuntimes();
  buildOnce();
}

function buildOnce(): void {
  if (process.env.TEST_REUSE_BUILD === '1' && existsSync(distPath('index.js'))) {
    console.info('[package tier] TEST_REUSE_BUILD=1: testing the dist/ already built.');
    return;
  }
  // A subpath listed before its source exists would fail deep in tsup; say which one instead.
  const missing = Object.entries(subpaths).filter(([, source]) => !existsSync(repoPath(source)));
  if (missing.length > 0) {
    throw new Error(
      `Cannot build: subpaths.mjs lists ${missing.map(([name, source]) => `${name} (${source})`).join(', ')}, which does not exist.`,
    );
  }
  const started = performance.now();
  const build = spawnSync('npm', ['run', 'build'], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (build.status !== 0) {
    throw new Error(
      `npm run build failed (${build.error?.message ?? `exit ${build.status}`}):\n${build.stdout}\n${build.stderr}`,
    );
  }
  console.info(`[package tier] built dist/ in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}
