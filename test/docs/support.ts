/**
 * Run a block of the documentation as a reader would: `docBlock` finds the block a page marks with
 * `<!-- run: id -->`; `readerProject` (or `gettingStartedProject`) makes a project in a new folder with
 * the page's own commands (so `npm init -y` makes it CommonJS, as for the reader), `save` writes the
 * block there as written, under the file name the page gives, and `shell` runs the page's command.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'vitest';
import { type DocumentationBlock, docBlock, extractBlocks } from '../../scripts/docs/snippets.mjs';
import { packPackage } from '../support/consumer-project.js';
import { repoPath } from '../support/paths.js';

const execFileAsync = promisify(execFile);

export { docBlock };

/**
 * What every store page's local recipe prints (one signed event delivered twice), checked line by line;
 * gives the event id, for the test to look the record up in the store.
 */
export function expectHandledOnceThenDuplicate(stdout: string): string {
  const lines = stdout.trim().split('\n');
  expect(lines).toHaveLength(3);
  expect(lines[0]).toMatch(/^handled evt_\S+ for ada@example\.com$/);
  expect(lines[1]).toBe('first delivery: 200 {"received":true}, handler runs: 1');
  expect(lines[2]).toBe('same event again: 200, duplicate: true, handler runs: 1');
  return /^handled (evt_\S+) /.exec(lines[0] ?? '')?.[1] ?? '';
}

/**
 * A reader's project, made the way a page says: an empty folder in which the page's commands run in
 * bash as written (`npm init -y` writes `"type": "commonjs"`, as it does for the reader). The one
 * difference is what `npm install service-webhooks` installs: the packed build (`npm pack` of dist/)
 * instead of the registry's release, with npm's cache first and no audit.
 */
export interface ReaderProject {
  /** The project's folder. */
  readonly dir: string;
  /** Run a page's `sh` block in the project, as the reader's shell would; rejects on a non-zero exit. */
  shell(
    code: string,
    env?: Record<string, string>,
    timeoutMs?: number,
  ): Promise<{ stdout: string; stderr: string }>;
  /** Save a page's block, as written (TypeScript and all), under the file name the page gives it. */
  save(block: DocumentationBlock, fileName: string): string;
  /** The project's package.json, as the page's commands left it. */
  packageJson(): { type?: string; [field: string]: unknown };
  /** Delete the project, and the tarball beside it. */
  remove(): void;
}

/** A new, empty reader's project (see {@link ReaderProject}); the page's commands make it a project. */
export async function readerProject(label: string): Promise<ReaderProject> {
  const root = await mkdtemp(join(tmpdir(), `service-webhooks-docs-${label}-`));
  await packPackage(root);
  mkdirSync(join(root, 'project'));
  return projectIn(root);
}

/** The project in `root/project`, the tarball beside it (where npm's `file:../…` dependency points). */
function projectIn(root: string): ReaderProject {
  const dir = join(root, 'project');
  const tarball = join(root, readdirSync(root).find((name) => name.endsWith('.tgz'))!);
  // `npm install … service-webhooks …` installs the tarball; every other npm command is npm's own.
  const npm = `npm() {
  if [ "$1" = install ] || [ "$1" = i ]; then
    shift
    local args=()
    for arg in "$@"; do
      case "$arg" in
        service-webhooks) args+=(${JSON.stringify(tarball)}) ;;
        *) args+=("$arg") ;;
      esac
    done
    command npm install --no-audit --no-fund --prefer-offline "\${args[@]}"
  else
    command npm "$@"
  fi
}`;
  return {
    dir,
    shell: (code, env = {}, timeoutMs = 120_000) =>
      execFileAsync('bash', ['-c', `set -euo pipefail\n${npm}\n${code}\n`], {
        cwd: dir,
        env: { ...process.env, ...env },
        timeout: timeoutMs,
      }),
    save: (block, fileName) => {
      const file = join(dir, fileName);
      writeFileSync(file, block.code);
      return file;
    },
    packageJson: () => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')),
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** The page that says how to make a project; the other pages' runnable files say "a project made as in Getting started". */
export const GETTING_STARTED = 'docs/guide/getting-started.md';

/** Where the projects made as Getting started says are kept, one per build of the package. */
const MADE_AS_GETTING_STARTED = join(tmpdir(), 'service-webhooks-docs-getting-started');

/** What the tarball holds (package.json and its `files`), hashed: one key per build of the package. */
function buildKey(): string {
  const hash = createHash('sha256');
  const { files } = JSON.parse(readFileSync(repoPath('package.json'), 'utf8')) as { files: string[] };
  const paths = ['package.json', ...files].flatMap((entry) => {
    if (!existsSync(repoPath(entry))) return [];
    if (!statSync(repoPath(entry)).isDirectory()) return [entry];
    return readdirSync(repoPath(entry), { recursive: true, encoding: 'utf8' }).map((name) =>
      join(entry, name),
    );
  });
  for (const path of paths.sort()) {
    if (statSync(repoPath(path)).isDirectory()) continue;
    hash.update(`${path}\0`).update(readFileSync(repoPath(path)));
  }
  return hash.digest('hex').slice(0, 16);
}

/**
 * A project made as Getting started says (its `first-receiver-project` block, run as written: `npm init
 * -y`, then the package and tsx), plus `extra` (a page's own `npm install …` block), run as written.
 * The Getting started part is made once per build of the package and copied: a copy costs a fraction
 * of its three npm commands, which every test file would otherwise run again. Test files starting at
 * once may each make it; the first rename wins.
 */
export async function gettingStartedProject(label: string, extra?: string): Promise<ReaderProject> {
  const made = join(MADE_AS_GETTING_STARTED, buildKey());
  if (!existsSync(made)) {
    mkdirSync(MADE_AS_GETTING_STARTED, { recursive: true });
    const fresh = await readerProject('getting-started');
    await fresh.shell(docBlock(GETTING_STARTED, 'first-receiver-project').code);
    try {
      renameSync(dirname(fresh.dir), made);
    } catch {
      fresh.remove(); // made meanwhile by another test file
    }
    // Projects of other builds, made over a day ago, go (none another run is still likely to copy).
    for (const name of readdirSync(MADE_AS_GETTING_STARTED)) {
      const path = join(MADE_AS_GETTING_STARTED, name);
      if (Date.now() - statSync(path).mtimeMs > 24 * 60 * 60 * 1000)
        rmSync(path, { recursive: true, force: true });
    }
  }
  const root = await mkdtemp(join(tmpdir(), `service-webhooks-docs-${label}-`));
  cpSync(made, root, { recursive: true, verbatimSymlinks: true });
  const project = projectIn(root);
  if (extra !== undefined) await project.shell(extra);
  return project;
}

/** The first `sh` block of `page`: where a page says what to install. */
export function installBlock(page: string): string {
  const block = extractBlocks(readFileSync(repoPath(page), 'utf8')).find(
    (candidate) => candidate.lang === 'sh',
  );
  expect(block?.code).toMatch(/^npm install /);
  return block!.code;
}

/** `command`, after checking that `page` tells the reader to run it (in backticks, as written there). */
export function commandOnPage(page: string, command: string): string {
  expect(readFileSync(repoPath(page), 'utf8').replace(/\s+/g, ' ')).toContain(`\`${command}\``);
  return command;
}
