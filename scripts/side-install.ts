/**
 * A side install: a folder of the repository with its own package.json and committed package-lock.json,
 * installed on demand into its own node_modules (gitignored) by the test tier or tool that needs it,
 * rather than by every contributor's `npm install`. There are three: scripts/side-installs/runtimes (Bun, Deno,
 * workerd, Next.js for the package tier), scripts/side-installs/mutation (StrykerJS for `npm run test:mutation`)
 * and docs/ (VitePress, TypeDoc and Mermaid for `npm run docs:build`).
 *
 * `ensureSideInstall()` runs `npm ci` there. It does nothing when the install is in place and was made
 * from the files as they are now: a hash of package.json, package-lock.json and .npmrc is stored in the
 * install and compared. Several processes may ask at once (CI runs vitest on several Node lines, and a
 * contributor may run two terminals): the install is made in a staging folder while holding a lock (a
 * directory, whose creation is atomic), then renamed into place, so no process sees half an install.
 *
 * Install scripts do not run (npm 11 runs no dependency's install script it was not told to allow).
 * None is needed by what the side installs hold: bun and deno ship their binary in the package, and
 * workerd's bin finds @cloudflare/workerd-<platform> itself.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, relative } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The files that define a side install: copied into the staging folder, and hashed. */
const DEFINITION = ['package.json', 'package-lock.json', '.npmrc'];
/** Inside node_modules, so that it arrives with the install in the one rename that puts it in place. */
const STAMP = '.service-webhooks-lock-hash';
/** How long one process waits for another's install, and after which a lock left behind is stale. */
const LOCK_TIMEOUT_MS = 10 * 60_000;
const INSTALL_COMMAND = ['npm', 'ci', '--no-audit', '--no-fund'] as const;

/** What a side install is: its folder, and what it holds (for messages). */
export interface SideInstall {
  /** The absolute path of the folder with package.json and package-lock.json. */
  dir: string;
  /** What it holds, for messages: `the test runtimes (Bun, Deno, workerd, Next.js)`. */
  label: string;
  /** The command that installs it by hand, for messages. */
  byHand: string;
}

function definitionHash(install: SideInstall): string {
  const hash = createHash('sha256');
  for (const file of DEFINITION) {
    const path = join(install.dir, file);
    hash.update(`${file}\0`);
    if (existsSync(path)) hash.update(readFileSync(path));
  }
  return hash.digest('hex');
}

/** Whether the side install is in place and was made from its package.json and lock as they are now. */
export function sideInstalled(install: SideInstall): boolean {
  try {
    return readFileSync(join(install.dir, 'node_modules', STAMP), 'utf8') === definitionHash(install);
  } catch {
    return false;
  }
}

/**
 * Install `install` with `npm ci` if it is missing or was made from another lock. Safe to call from
 * several processes at once: one installs, the others wait for it (up to ten minutes). Throws an
 * error naming the command when the install fails (the registry unreachable, say).
 */
export async function ensureSideInstall(install: SideInstall): Promise<void> {
  if (sideInstalled(install)) return;
  await withLock(install, async () => {
    // Another process may have installed it while this one waited for the lock.
    if (!sideInstalled(install)) await installInto(install);
  });
}

async function installInto(install: SideInstall): Promise<void> {
  const started = performance.now();
  const where = relative(ROOT, install.dir);
  const staging = join(install.dir, `.staging-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging);
  try {
    for (const file of DEFINITION) {
      if (existsSync(join(install.dir, file))) copyFileSync(join(install.dir, file), join(staging, file));
    }
    const [command, ...args] = INSTALL_COMMAND;
    const { code, output } = await runCommand(command, args, staging);
    if (code !== 0) {
      throw new Error(
        `Installing ${install.label} failed: \`${INSTALL_COMMAND.join(' ')}\` for ${where}/ (run in ${staging}) exited with ${code}. Is the npm registry reachable? \`${install.byHand}\` retries.\n${output.slice(-4000)}`,
      );
    }
    writeFileSync(join(staging, 'node_modules', STAMP), definitionHash(install));
    // Out with the old install first: rename() does not replace a non-empty directory. Other
    // processes wait on the lock rather than use a stale install, so the gap between is harmless.
    const modules = join(install.dir, 'node_modules');
    const old = join(install.dir, `.old-${process.pid}`);
    if (existsSync(modules)) renameSync(modules, old);
    renameSync(join(staging, 'node_modules'), modules);
    rmSync(old, { recursive: true, force: true });
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  console.info(`[${where}] installed in ${((performance.now() - started) / 1000).toFixed(1)} s`);
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

/** Run `action` holding the install's lock; a lock older than the timeout, or whose holder is gone, is taken over. */
async function withLock(install: SideInstall, action: () => Promise<void>): Promise<void> {
  const lock = join(install.dir, '.install.lock');
  const deadline = Date.now() + LOCK_TIMEOUT_MS;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (lockIsStale(lock)) {
      rmSync(lock, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `Waited ${LOCK_TIMEOUT_MS / 60_000} min for another process to install ${install.label} (${lock} is held); remove that folder if no install is running.`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  writeFileSync(join(lock, 'pid'), String(process.pid));
  try {
    await action();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function lockIsStale(lock: string): boolean {
  try {
    if (Date.now() - statSync(lock).mtimeMs > LOCK_TIMEOUT_MS) return true;
    const pid = Number(readFileSync(join(lock, 'pid'), 'utf8'));
    process.kill(pid, 0); // signal 0 only checks: it throws ESRCH when the holder has exited
    return false;
  } catch (error) {
    // No pid file yet: the holder has just created the lock.
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
