/**
 * Declaration merging changes the types of the whole program it appears in, so each case is compiled
 * as a program of its own with the TypeScript compiler: against the sources (declaration-merging.test.ts,
 * unit tier) and against the built declarations users get, ESM and CJS
 * (declaration-merging.package.test.ts, package tier).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, test } from 'vitest';
import { distPath } from '../support/paths.js';
import { CONSUMER_OPTIONS } from './compiler-options.js';

/**
 * Each case compiles the whole package as a program: about 5 s of CPU alone, but it shares the CPU with
 * the rest of its tier (30 s on a busy CI run went past the default 20 s).
 */
const COMPILE_TIMEOUT_MS = 120_000;

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

function diagnostics(file: string, paths: Record<string, string[]> | undefined): string[] {
  const program = ts.createProgram([file], {
    ...CONSUMER_OPTIONS,
    ...(paths ? { paths } : {}),
  });
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

const sources = {
  'service-webhooks': ['./src/index.ts'],
  'service-webhooks/core': ['./src/core.ts'],
};
// Without paths the package resolves to itself through its exports map: the built .d.ts files.
const built = undefined;

export function declarationMergingCases(label: 'sources' | 'built declarations'): void {
  const paths = label === 'sources' ? sources : built;
  describe('project and payment data are open to declaration merging', () => {
    test(
      `undocumented fields do not compile until declared (${label})`,
      () => {
        if (label === 'built declarations')
          expect(existsSync(distPath('index.d.ts')), 'run npm run build').toBe(true);
        const errors = diagnostics(fixture('not-augmented.ts'), paths);
        expect(errors).toHaveLength(2);
        expect(errors.join('\n')).toMatch(/Property 'amount' does not exist on type 'PaymentData'/);
        expect(errors.join('\n')).toMatch(/Property 'name' does not exist on type 'ProjectData'/);
      },
      COMPILE_TIMEOUT_MS,
    );

    test(
      `declared fields are typed everywhere (${label})`,
      () => {
        expect(diagnostics(fixture('augmented.ts'), paths)).toEqual([]);
      },
      COMPILE_TIMEOUT_MS,
    );
  });
}
