/**
 * examples/bun on the real Bun runtime (the `bun` package of scripts/side-installs/runtimes): `bun run examples/bun/server.ts`,
 * `Bun.serve` on port 0, the built package resolved by its package.json exports (self-reference, as
 * the Node examples do). Bun applies the nearest tsconfig.json's `paths` to every file, and the
 * repository root's map service-webhooks to the sources (dist/web.js would load src/ beside dist/):
 * `--tsconfig-override` gives every file the example's own tsconfig, as a user's project has.
 */
import { expect, test } from 'vitest';
import { runRuntimeCases } from './runtime-cases.js';
import { assertBuilt, ROOT, run, SECRET, startServer, versionOf } from './runtime-process.js';

const BUN_ARGS = ['--tsconfig-override=examples/bun/tsconfig.json'];
const version = await versionOf(async () => (await run('bun', ['--version'])).trim());

test(`Bun ${version}: examples/bun loads the built files in dist/ and nothing else of the package`, async () => {
  assertBuilt();
  const script = `await import('./examples/bun/server.ts');
    console.log(JSON.stringify(Object.keys(require.cache).filter((k) => !k.includes('/node_modules/'))));
    process.exit(0);`;
  const stdout = await run('bun', [...BUN_ARGS, '-e', script], ROOT, { PORT: '0', WEBHOOK_SECRET: SECRET });
  const loaded = JSON.parse(stdout.trim().split('\n').at(-1)!) as string[];
  expect(loaded.sort()).toEqual(
    [
      `${ROOT}dist/core.js`,
      `${ROOT}dist/index.js`,
      `${ROOT}dist/schemas.js`,
      `${ROOT}dist/web.js`,
      `${ROOT}examples/bun/server.ts`,
    ].sort(),
  );
});

runRuntimeCases({
  name: `Bun ${version}`,
  cleanRefusalUpTo: Number.POSITIVE_INFINITY,
  start: () => startServer('bun', [...BUN_ARGS, 'run', 'examples/bun/server.ts'], ROOT),
});
