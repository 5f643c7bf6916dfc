/**
 * A vitest reporter that says where a run's time went: per project (tier), the files' summed time and
 * the slowest files, each from its start to its end (import and collection included, which vitest's
 * JSON report leaves out). `.ci/run` adds it beside the default reporter, so every CI log carries the
 * table that CI's 15-minute budget is judged by.
 *
 * @example
 * ```sh
 * npx vitest run --project integration --reporter=default --reporter=./test/support/durations-reporter.ts
 * ```
 */
import { relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

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

  onTestRunEnd(): void {
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

function seconds(ms: number): string {
  return (ms / 1000).toFixed(1);
}
