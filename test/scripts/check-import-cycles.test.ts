import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, test } from 'vitest';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../../', import.meta.url));
const script = 'scripts/check-import-cycles.mjs';
const fixtures = 'test/scripts/fixtures/import-circle';

/** Runs the check as `npm run lint` does, and returns its exit code and output. */
async function check(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [script, ...args], { cwd: repo });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('scripts/check-import-cycles.mjs', () => {
  test('fails on a circle of type-only imports and prints it file by file', async () => {
    const result = await check(`${fixtures}/circle`);

    expect(result.code).toBe(1);
    expect(result.stderr).toContain('1 import circle(s) among 3 files');
    expect(result.stderr).toContain(
      `${fixtures}/circle/a.ts\n    -> ${fixtures}/circle/b.ts\n    -> ${fixtures}/circle/c.ts\n    -> ${fixtures}/circle/a.ts`,
    );
  });

  test('passes on imports that go one way', async () => {
    const result = await check(`${fixtures}/clean`);

    expect(result.code).toBe(0);
    expect(result.stdout).toContain('No import circles among 2 files');
  });

  test('the sources have no import circle, and the check takes seconds', async () => {
    const started = performance.now();
    const result = await check();

    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    // About 0.5 s warm, 2 s cold; a loaded 2-core CI machine stays well inside this.
    expect(performance.now() - started).toBeLessThan(20_000);
  });
});
