/**
 * The runtimes and frameworks the package tier runs the built package on: Bun, Deno, workerd (through
 * miniflare) and Next.js with React. They weigh about 650 MB, more than everything else a contributor
 * installs, and only the package tier uses them; so they are not root devDependencies but a side
 * install of their own, test/support/runtimes/ (its package.json and committed package-lock.json pin
 * them), and a fresh clone's `npm install` stays small.
 *
 * `ensureRuntimes()` installs them with `npm ci` into test/support/runtimes/node_modules (gitignored).
 * The package tier's globalSetup (test/support/build.global-setup.ts) calls it once per vitest run,
 * before any test file is loaded (the runtime tests read versions and import miniflare at load time).
 * It does nothing when the install is there and was made from the lock as it is now: a hash of
 * package.json and package-lock.json is stored beside the install and compared.
 *
 * Several vitest processes may ask at once (CI runs one per Node line, and a contributor may run two
 * terminals): the install is made in a staging folder while holding a lock (a directory, whose
 * creation is atomic), then renamed into place, so no process ever sees half an install.
 *
 * `npm run runtimes` does the same by hand, for running an example on one of these runtimes.
 *
 * The install scripts of bun, deno and workerd do not run (npm 11 runs no dependency's install
 * script it was not told to allow), and none is needed: bun and deno ship their binary in the
 * package, and workerd's bin finds @cloudflare/workerd-<platform> itself.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import type { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { repoPath } from './paths.js';

/** The side install's folder: its package.json and package-lock.json, and node_modules once installed. */
export const RUNTIMES_DIR = repoPath('test', 'support', 'runtimes');
const MODULES = join(RUNTIMES_DIR, 'node_modules');
/** Inside node_modules, so that it arrives with the install in the one rename that puts it in place. */
const STAMP = join(MODULES, '.service-webhooks-lock-hash');
/** Held while installing; a directory because mkdir either creates it or fails, atomically. */
const LOCK = join(RUNTIMES_DIR, '.install.lock');
/** examples/next resolves `next` and `react` through this link (Next.js looks for them from the app). */
const NEXT_EXAMPLE_MODULES = repoPath('examples', 'next', 'node_modules');
/** How long one process waits for another's install, and after which a lock left behind is stale. */
const LOCK_TIMEOUT_MS = 10 * 60_000;
const INSTALL_COMMAND = 'npm ci --no-audit --no-fund';

/** An absolute path in the side install's node_modules: `runtimesPath('miniflare', 'package.json')`. */
export function runtimesPath(...segments: string[]): string {
  return join(MODULES, ...segments);
}

/** The absolute path of a binary of the side install (`bun`, `deno`, `workerd`, `next`). */
export function runtimeBinPath(name: string): string {
  return runtimesPath('.bin', name);
}

function lockHash(): string {
  const hash = createHash('sha256');
  for (const file of ['package.json', 'package-lock.json'])
    hash.update(readFileSync(join(RUNTIMES_DIR, file)));
  return hash.digest('hex');
}

/** Whether the side install is in place and was made from the lock as it is now. */
export function runtimesInstalled(): boolean {
  try {
    return readFileSync(STAMP, 'utf8') === lockHash();
  } catch {
    return false;
  }
}

/**
 * Install the side install if it is missing or was made from another lock, and link examples/next to
 * it. Safe to call from several processes at once: one installs, the others wait for it (up to ten
 * minutes). Throws an error naming the command when the install fails (the registry unreachable, say).
 */
export async function ensureRuntimes(): Promise<void> {
  if (!runtimesInstalled()) {
    await withLock(async () => {
      // Another process may have installed it while this one waited for the lock.
      if (!runtimesInstalled()) await install();
    });
  }
  linkNextExample();
}

async function install(): Promise<void> {
  const started = performance.now();
  const staging = join(RUNTIMES_DIR, `.staging-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging);
  try {
    for (const file of ['package.json', 'package-lock.json']) {
      copyFileSync(join(RUNTIMES_DIR, file), join(staging, file));
    }
    const [command, ...args] = INSTALL_COMMAND.split(' ') as [string, ...string[]];
    const { code, output } = await runCommand(command, args, staging);
    if (code !== 0) {
      throw new Error(
        `Installing the test runtimes (Bun, Deno, workerd, Next.js) failed: \`${INSTALL_COMMAND}\` in ${relative(repoPath(), RUNTIMES_DIR)}/ (run in ${staging}) exited with ${code}. Is the npm registry reachable? Run \`npm run runtimes\` to retry.\n${output.slice(-4000)}`,
      );
    }
    writeFileSync(join(staging, 'node_modules', '.service-webhooks-lock-hash'), lockHash());
    // Out with the old install first: rename() does not replace a non-empty directory. Other
    // processes wait on the lock rather than use a stale install, so the gap between is harmless.
    const old = join(RUNTIMES_DIR, `.old-${process.pid}`);
    if (existsSync(MODULES)) renameSync(MODULES, old);
    renameSync(join(staging, 'node_modules'), MODULES);
    rmSync(old, { recursive: true, force: true });
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  console.info(
    `[runtimes] installed test/support/runtimes in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
}

function runCommand(command: string, args: string[], cwd: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    // --prefix as well as cwd: inside `npm run`, npm would otherwise take the repository as its prefix.
    const child = spawn(command, [...args, '--prefix', cwd], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (stream: Readable) =>
      stream.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
    keep(child.stdout);
    keep(child.stderr);
    child.on('error', (error) => resolve({ code: -1, output: `${output}\n${error.message}` }));
    child.on('close', (code) => resolve({ code: code ?? -1, output }));
  });
}

/** Run `action` holding the install lock; a lock older than the timeout, or whose holder is gone, is taken over. */
async function withLock(action: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + LOCK_TIMEOUT_MS;
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (lockIsStale()) {
      rmSync(LOCK, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `Waited ${LOCK_TIMEOUT_MS / 60_000} min for another process to install the test runtimes (${LOCK} is held); remove that folder if no install is running.`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  writeFileSync(join(LOCK, 'pid'), String(process.pid));
  try {
    await action();
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

function lockIsStale(): boolean {
  try {
    if (Date.now() - statSync(LOCK).mtimeMs > LOCK_TIMEOUT_MS) return true;
    const pid = Number(readFileSync(join(LOCK, 'pid'), 'utf8'));
    process.kill(pid, 0); // throws ESRCH when the holder has exited (signal 0 only checks)
    return false;
  } catch (error) {
    // No pid file yet: the holder has just created the lock.
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** examples/next/node_modules → the side install's, relative so that it survives the install's renames. */
function linkNextExample(): void {
  const target = relative(repoPath('examples', 'next'), MODULES);
  try {
    if (lstatSync(NEXT_EXAMPLE_MODULES).isSymbolicLink() && readlinkSync(NEXT_EXAMPLE_MODULES) === target)
      return;
    rmSync(NEXT_EXAMPLE_MODULES, { recursive: true, force: true });
  } catch {
    // Not there yet.
  }
  try {
    symlinkSync(target, NEXT_EXAMPLE_MODULES, 'dir');
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

/** miniflare's `Miniflare` class, loaded from the side install (installed by the package tier's globalSetup). */
export async function loadMiniflare(): Promise<new (options: MiniflareOptions) => MiniflareInstance> {
  let entry: string;
  try {
    entry = createRequire(join(RUNTIMES_DIR, 'package.json')).resolve('miniflare');
  } catch (error) {
    throw new Error(`miniflare is not installed in ${RUNTIMES_DIR}: run \`npm run runtimes\`.`, {
      cause: error,
    });
  }
  const module = (await import(pathToFileURL(entry).href)) as {
    Miniflare: new (options: MiniflareOptions) => MiniflareInstance;
  };
  return module.Miniflare;
}

// `npm run runtimes` (tsx test/support/runtimes.ts): the same install by hand, to run an example on
// one of these runtimes outside the tests.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await ensureRuntimes();
  console.info(`[runtimes] ready in ${MODULES} (binaries in node_modules/.bin there)`);
}
