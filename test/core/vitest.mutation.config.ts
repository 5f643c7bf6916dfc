import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';
import { INTEGRATION_TESTS, PACKAGE_TESTS, packageAliases } from '../../vitest.config.js';

/**
 * The unit tier as StrykerJS runs it (`npm run test:mutation`, stryker.config.mjs): the files of the `unit`
 * project of vitest.config.ts, as one plain project (the vitest runner cannot pick a project by name),
 * without what checks types rather than behaviour: the type tests (`*.test-d.ts`) and test/types, which
 * compiles the sources with tsc (Stryker's instrumented copies do not compile alike; a mutant changes
 * no type).
 */
export default defineConfig({
  root: fileURLToPath(new URL('../../', import.meta.url)),
  resolve: { alias: packageAliases },
  test: {
    testTimeout: 20_000,
    hookTimeout: 120_000,
    include: ['test/**/*.test.ts'],
    exclude: [...configDefaults.exclude, ...INTEGRATION_TESTS, ...PACKAGE_TESTS, 'test/types/**'],
    typecheck: { enabled: false },
  },
});
