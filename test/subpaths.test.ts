/**
 * subpaths.mjs is the one list of the public subpaths; package.json (`exports`, `typesVersions`) and
 * tsconfig.json (`paths`) are written from it by `npm run sync:subpaths`, and tsup.config.ts and
 * vitest.config.ts read it. This fails while any of them says something else.
 */
import { readdirSync, readFileSync } from 'node:fs';
import ts from 'typescript';
import { describe, expect, test } from 'vitest';
import {
  packageExports,
  packageTypesVersions,
  specifier,
  subpaths,
  tsconfigPaths,
  vitestAliases,
} from '../subpaths.mjs';
import { entries } from '../tsup.config.js';
import { packageAliases } from '../vitest.config.js';
import { ROOT, repoPath } from './support/paths.js';

const FIX = 'out of step with subpaths.mjs: run `npm run sync:subpaths`';
const packageJson = JSON.parse(readFileSync(repoPath('package.json'), 'utf8'));
const tsconfig = ts.parseConfigFileTextToJson(
  'tsconfig.json',
  readFileSync(repoPath('tsconfig.json'), 'utf8'),
);

describe('one list of the public subpaths (subpaths.mjs)', () => {
  test('package.json exports and typesVersions are written from it', () => {
    expect(packageJson.exports, `package.json exports ${FIX}`).toEqual(packageExports());
    expect(packageJson.typesVersions, `package.json typesVersions ${FIX}`).toEqual(packageTypesVersions());
  });

  test('tsconfig.json paths are written from it', () => {
    expect(tsconfig.error).toBeUndefined();
    expect(tsconfig.config.compilerOptions.paths, `tsconfig.json paths ${FIX}`).toEqual(tsconfigPaths());
  });

  test('tsup builds one bundle per subpath, from its source, and the cli bin besides', () => {
    expect(entries).toEqual(subpaths);
    expect(readFileSync(repoPath('tsup.config.ts'), 'utf8')).toContain("entry: { cli: 'src/cli/main.ts' }");
  });

  test('vitest resolves each package name to its source, the longer names first', () => {
    expect(packageAliases).toEqual(vitestAliases(ROOT));
    expect(Object.keys(packageAliases)).toHaveLength(Object.keys(subpaths).length);
    for (const [name, source] of Object.entries(subpaths)) {
      expect(packageAliases[specifier(name)]).toBe(repoPath(source));
    }
    // An alias also matches the names it prefixes: the root's must come after every subpath's.
    expect(Object.keys(packageAliases).at(-1)).toBe('service-webhooks');
  });

  test('the root is `index`, and every name is one a bundle and a subpath can have', () => {
    expect(Object.keys(subpaths)[0]).toBe('index');
    for (const [name, source] of Object.entries(subpaths)) {
      expect(name).toMatch(/^[a-z][a-z0-9-]*$/);
      expect(source).toMatch(/^(src|adapters)\/.+\.ts$/);
    }
  });
});

/**
 * Only the root reaches MemoryStore (and lru-cache): every other source imports the core as
 * `service-webhooks/core`, so an application that takes `createWebhooks` from the core never loads them,
 * bundled or not. Type-only imports are erased and do not count.
 */
describe('the root is the only importer of MemoryStore', () => {
  const sources = (folder: string): string[] =>
    readdirSync(repoPath(folder), { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts'))
      .map((file) => `${folder}/${file}`);
  const files = [...sources('adapters'), ...sources('src')].filter((file) => file !== 'src/index.ts');
  const rootImport = /^(?:import|export)\s+(?!type\s)[^;]*?from\s+'service-webhooks';/ms;

  test('no other source imports the root by name (value imports)', () => {
    const offenders = files.filter((file) =>
      readFileSync(repoPath(file), 'utf8')
        .split(/\n(?=import|export)/)
        .some((statement) => rootImport.test(statement)),
    );
    expect(offenders).toEqual([]);
  });

  test('only the root imports memory-store.ts', () => {
    const importers = files.filter((file) =>
      /from '\.{1,2}\/(?:\.\.\/)*memory-store\.js'/.test(readFileSync(repoPath(file), 'utf8')),
    );
    expect(importers).toEqual([]);
    expect(readFileSync(repoPath('src/index.ts'), 'utf8')).toContain("from './memory-store.js'");
  });
});
