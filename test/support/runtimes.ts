/**
 * The runtimes and frameworks the package tier runs the built package on: Bun, Deno, workerd (through
 * miniflare) and Next.js with React. They weigh about 650 MB, more than everything else a contributor
 * installs, and only the package tier uses them; so they are not root devDependencies but a side
 * install (scripts/side-install.ts), scripts/side-installs/runtimes/, whose package.json and committed
 * package-lock.json pin them, and a fresh clone's `npm install` stays small.
 *
 * The package tier's globalSetup (test/support/build.global-setup.ts) calls `ensureRuntimes()` once
 * per vitest run, before any test file is loaded: the runtime tests read versions and import miniflare
 * when their file loads, so a beforeAll would be too late. `npx tsx test/support/runtimes.ts` does the
 * same by hand, to run an example on one of these runtimes outside the tests.
 */
import { lstatSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import type { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { ensureSideInstall, type SideInstall } from '../../scripts/side-install.js';
import { repoPath } from './paths.js';

const RUNTIMES: SideInstall = {
  dir: repoPath('scripts', 'side-installs', 'runtimes'),
  label: 'the test runtimes (Bun, Deno, workerd, Next.js)',
  byHand: 'npx tsx test/support/runtimes.ts',
};
const MODULES = join(RUNTIMES.dir, 'node_modules');
/** examples/next resolves `next` and `react` through this link (Next.js looks for them from the app). */
const NEXT_APP = repoPath('examples', 'next');

/** An absolute path in the runtimes' node_modules: `runtimesPath('miniflare', 'package.json')`. */
export function runtimesPath(...segments: string[]): string {
  return join(MODULES, ...segments);
}

/** The absolute path of a binary of the runtimes' install (`bun`, `deno`, `workerd`, `next`). */
export function runtimeBinPath(name: string): string {
  return runtimesPath('.bin', name);
}

/**
 * Install the runtimes if they are missing or were installed from another lock (a no-op otherwise),
 * and link examples/next/node_modules to them. Safe to call from several processes at once.
 */
export async function ensureRuntimes(): Promise<void> {
  await ensureSideInstall(RUNTIMES);
  linkNextExample();
}

/** examples/next/node_modules → the runtimes' node_modules, relative so that it survives the install's renames. */
function linkNextExample(): void {
  const link = join(NEXT_APP, 'node_modules');
  const target = relative(NEXT_APP, MODULES);
  try {
    if (lstatSync(link).isSymbolicLink() && readlinkSync(link) === target) return;
    rmSync(link, { recursive: true, force: true });
  } catch {
    // Not there yet.
  }
  try {
    symlinkSync(target, link, 'dir');
  } catch (error) {
    // Another process made the same link in between.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/** The options of miniflare 3's constructor that the tests use (its own types are in the side install, which `tsc` does not see). */
export interface MiniflareOptions {
  modules: boolean;
  script: string;
  compatibilityDate: string;
  compatibilityFlags?: string[];
  bindings?: Record<string, string>;
  handleRuntimeStdio?(stdout: Readable, stderr: Readable): void;
}

/** The part of a miniflare 3 instance the tests use. */
export interface MiniflareInstance {
  readonly ready: Promise<URL>;
  dispose(): Promise<void>;
}

/** miniflare's `Miniflare` class, loaded from the runtimes' install (the package tier's globalSetup installs it). */
export async function loadMiniflare(): Promise<new (options: MiniflareOptions) => MiniflareInstance> {
  let entry: string;
  try {
    entry = createRequire(join(RUNTIMES.dir, 'package.json')).resolve('miniflare');
  } catch (error) {
    throw new Error(`miniflare is not installed in ${RUNTIMES.dir}: run \`${RUNTIMES.byHand}\`.`, {
      cause: error,
    });
  }
  const module = (await import(pathToFileURL(entry).href)) as {
    Miniflare: new (options: MiniflareOptions) => MiniflareInstance;
  };
  return module.Miniflare;
}

// `npx tsx test/support/runtimes.ts`: the same install by hand.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await ensureRuntimes();
  console.info(`Runtimes ready in ${MODULES} (their binaries in node_modules/.bin there).`);
}
