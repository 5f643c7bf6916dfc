/**
 * `npm run test:mutation` (stryker.config.mjs): StrykerJS, installed on demand. Stryker and its
 * vitest runner (about 55 MB with Babel and RxJS) are run by hand only, never by CI, so they are not
 * root devDependencies but a side install (scripts/side-install.ts), scripts/side-installs/mutation/,
 * pinned by its package-lock.json. This installs it when missing (a no-op otherwise), then runs its
 * `stryker` with the arguments given: `npm run test:mutation -- --mutate src/guarded-run.ts`.
 *
 * The runner's vitest is the repository's own: scripts/side-installs/mutation/.npmrc keeps npm from
 * installing a second copy there, and Node finds the root one by walking up from that folder.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ensureSideInstall, type SideInstall } from '../../scripts/side-install.js';
import { ROOT, repoPath } from './paths.js';

const MUTATION: SideInstall = {
  dir: repoPath('scripts', 'side-installs', 'mutation'),
  label: 'StrykerJS (scripts/side-installs/mutation)',
  byHand: 'npm run test:mutation',
};

await ensureSideInstall(MUTATION);
const stryker = join(MUTATION.dir, 'node_modules', '@stryker-mutator', 'core', 'bin', 'stryker.js');
const child = spawn(process.execPath, [stryker, ...process.argv.slice(2)], { cwd: ROOT, stdio: 'inherit' });
// Stop with Stryker, and let Stryker see a Ctrl-C (it cleans its sandboxes up on SIGINT).
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  process.exitCode = code ?? (signal === null ? 1 : 128);
});
