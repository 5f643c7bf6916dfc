import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';
import { assertBuilt, ROOT } from '../support/paths.js';
import { BUILT_ENV } from './run-example.js';

/** What the examples import resolves to the built files, for tsx as for plain node, ESM and CJS. */
test('service-webhooks/* resolves to ./dist by self-reference when the examples run', async () => {
  assertBuilt();
  const subpaths = [
    'service-webhooks',
    'service-webhooks/express',
    'service-webhooks/fastify',
    'service-webhooks/web',
  ];
  const script = `for (const s of ${JSON.stringify(subpaths)}) console.log(import.meta.resolve(s));`;
  const run = (args: string[]) =>
    promisify(execFile)(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...BUILT_ENV } });
  const tsx = await run(['--import', 'tsx', '--input-type=module', '-e', script]);
  const plain = await run(['--input-type=module', '-e', script]);
  const cjs = await run([
    '-e',
    `for (const s of ${JSON.stringify(subpaths)}) console.log(require.resolve(s));`,
  ]);
  for (const { stdout } of [tsx, plain, cjs]) {
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(subpaths.length);
    for (const line of lines) expect(line).toMatch(/[/\\]dist[/\\](index|express|fastify|web)\.c?js$/);
  }
});
