/**
 * Paths in the repository, the same from any folder of test/: a test that moves keeps its paths.
 * Fixtures beside a test are still best found with `new URL('./fixtures/…', import.meta.url)`.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root, ending in a separator (so `${ROOT}dist/index.js` is a path). */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** An absolute path from the repository root: `repoPath('examples', 'next')`. */
export function repoPath(...segments: string[]): string {
  return join(ROOT, ...segments);
}

/** An absolute path in the built package, dist/. */
export function distPath(...segments: string[]): string {
  return repoPath('dist', ...segments);
}

/**
 * Fail, saying how to fix it, when the built files a test runs are missing. The package tier builds
 * them once in its globalSetup (test/support/build.global-setup.ts); the unit tier never needs them.
 */
export function assertBuilt(...files: string[]): void {
  for (const file of files.length > 0 ? files : ['index.js']) {
    if (!existsSync(distPath(file))) {
      throw new Error(
        `dist/${file} is missing: run \`npm run build\`, or run this test in its tier (\`npm run test:all\`, or \`npx vitest run --project package\`), which builds first.`,
      );
    }
  }
}
