/**
 * A vitest reporter that says where a run's time went: per project (tier), the files' summed time and
 * the slowest files, each from its start to its end (import and collection included, which vitest's
 * JSON report leaves out). `.ci/run` adds it beside the default reporter, so every CI log carries the
 * table that CI's 15-minute budget is judged by.
 *
 * It also names what failed, one line each (file, test, Node version, the error's first line), and
 * with `TEST_FAILURES_FILE` set appends those lines to that file: `.ci/run` prints it as the very last
 * thing in its log, because a CI verdict is often read from the log's tail alone, where the lanes'
 * whole logs (and the default reporter's failure blocks inside them) have scrolled away.
 *
 * @example
 * ```sh
 * npx vitest run --project integration --reporter=default --reporter=./test/support/durations-reporter.ts
 * ```
 */
import { appendFileSync } from 'node:fs';
import { relative } from 'node:path';
import type { Reporter, SerializedError, TestModule } from 'vitest/node';

/** How many of each project's slowest files the table names (`DURATIONS_ALL=1`: every file). */
const SLOWEST = process.env.DURATIONS_ALL === '1' ? Number.POSITIVE_INFINITY : 12;

interface FileTime {
  readonly project: string;
  readonly file: string;
  readonly ms: number;
  readonly started: number | undefined;
  readonly ended: number;
}

export default class DurationsReporter implements Reporter {
  readonly #files: FileTime[] = [];
  readonly #root = process.cwd();
  /** When each file started: a tier's wall time runs from its first file's start to its last file's end. */
  readonly #starts = new Map<string, number>();

  onTestModuleStart(module: TestModule): void {
    this.#starts.set(module.moduleId, Date.now());
  }

  onTestModuleEnd(module: TestModule): void {
    const diagnostic = module.diagnostic();
    const ms =
      diagnostic.environmentSetupDuration +
      diagnostic.prepareDuration +
      diagnostic.collectDuration +
      diagnostic.setupDuration +
      diagnostic.duration;
    this.#files.push({
      project: module.project.name || 'default',
      started: this.#starts.get(module.moduleId),
      ended: Date.now(),
      file: relative(this.#root, module.moduleId),
      ms,
    });
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>): void {
    this.#reportTimes();
    this.#reportFailures(modules, unhandledErrors);
  }

  #reportFailures(modules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>): void {
    const failures: string[] = [];
    const where = `Node ${process.versions.node}`;
    for (const module of modules) {
      const file = relative(this.#root, module.moduleId);
      const project = module.project.name || 'default';
      // A file that failed outside its tests: its import, a hook, a timeout of its own.
      for (const error of module.errors())
        failures.push(`[${project}] ${file} (${where}): ${firstLine(error)}`);
      for (const test of module.children.allTests('failed')) {
        const error = test.result().errors?.[0];
        failures.push(
          `[${project}] ${file} > ${test.fullName} (${where}): ${error ? firstLine(error) : 'failed'}`,
        );
      }
    }
    for (const error of unhandledErrors) failures.push(`[unhandled] (${where}): ${firstLine(error)}`);
    if (failures.length === 0) return;
    process.stdout.write(
      `\nFailed (${failures.length}):\n${failures.map((line) => `  ${line}`).join('\n')}\n`,
    );
    const file = process.env.TEST_FAILURES_FILE;
    if (file) appendFileSync(file, `${failures.join('\n')}\n`);
  }

  #reportTimes(): void {
    const projects = [...new Set(this.#files.map((entry) => entry.project))];
    const lines = ['', 'Where the time went (each file from start to end, import included):'];
    for (const project of projects) {
      const files = this.#files.filter((entry) => entry.project === project).sort((a, b) => b.ms - a.ms);
      const total = files.reduce((sum, entry) => sum + entry.ms, 0);
      // Type-test files run in tsc, not in a worker: vitest reports them, with no time, when tsc is done.
      const timed = files.filter((entry) => entry.ms > 0 && entry.started !== undefined);
      const first = Math.min(...timed.map((entry) => entry.started ?? Number.POSITIVE_INFINITY));
      const last = Math.max(...timed.map((entry) => entry.ended));
      const wall = timed.length === 0 ? '' : `, ${seconds(last - first)} s from first start to last end`;
      lines.push(`  ${project}: ${files.length} files, ${seconds(total)} s summed${wall}`);
      for (const entry of files.slice(0, SLOWEST))
        lines.push(`    ${seconds(entry.ms).padStart(6)} s  ${entry.file}`);
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}

/** An error's name and the first line of its message: what tells one failure from another in a list. */
function firstLine(error: SerializedError): string {
  const message = String(error.message ?? error).split('\n', 1)[0] ?? '';
  const name = typeof error.name === 'string' && error.name !== 'Error' ? `${error.name}: ` : '';
  return `${name}${message}`.slice(0, 300);
}

function seconds(ms: number): string {
  return (ms / 1000).toFixed(1);
}
