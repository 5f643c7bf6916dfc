/**
 * examples/deno on the real Deno runtime (the `deno` package of scripts/side-installs/runtimes): `deno run` in the example's
 * folder, `Deno.serve` on port 0. Its deno.json sets `"nodeModulesDir": "manual"`: bare imports
 * resolve through package.json and the node_modules npm installed, so Deno loads the same built files
 * a Node user gets (npm: specifiers would fetch the published package from the registry instead, and
 * an import map would bypass the package's `exports`). Permissions are the least it runs with: the
 * network, and the two variables it reads.
 */
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';
import { runRuntimeCases } from './runtime-cases.js';
import { assertBuilt, ROOT, run, startServer, versionOf } from './runtime-process.js';

const EXAMPLE = fileURLToPath(new URL('../../examples/deno/', import.meta.url));
const PERMISSIONS = ['--allow-net', '--allow-env=WEBHOOK_SECRET,PORT'];
const version = await versionOf(async () => /^deno (\S+)/.exec(await run('deno', ['--version']))?.[1] ?? '?');

test(`Deno ${version}: examples/deno resolves service-webhooks to dist/ and type-checks against its .d.ts`, async () => {
  assertBuilt();
  const info = JSON.parse(await run('deno', ['info', '--json', 'server.ts'], EXAMPLE)) as {
    modules: { specifier: string }[];
  };
  const loaded = info.modules.map((module) => module.specifier).filter((s) => !s.includes('/node_modules/'));
  expect(loaded.sort()).toEqual(
    [
      `file://${EXAMPLE}server.ts`,
      `file://${ROOT}dist/core.d.ts`,
      `file://${ROOT}dist/core.js`,
      `file://${ROOT}dist/index.d.ts`,
      `file://${ROOT}dist/index.js`,
      `file://${ROOT}dist/schemas.d.ts`,
      `file://${ROOT}dist/schemas.js`,
      `file://${ROOT}dist/web.d.ts`,
      `file://${ROOT}dist/web.js`,
    ].sort(),
  );
  // The root tsconfig does not know Deno's globals: Deno's own checker is the example's type check.
  await run('deno', ['check', 'server.ts'], EXAMPLE);
});

runRuntimeCases({
  name: `Deno ${version}`,
  cleanRefusalUpTo: Number.POSITIVE_INFINITY,
  start: () => startServer('deno', ['run', ...PERMISSIONS, 'server.ts'], EXAMPLE),
});
