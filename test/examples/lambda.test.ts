import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';
import { assertBuilt, ROOT } from '../support/paths.js';
import { BUILT_ENV } from './run-example.js';

test('examples/lambda: invoking the handler with a signed v2 event runs its handler (built package)', async () => {
  assertBuilt();
  const email = `ada+${Date.now()}@example.com`;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', 'examples/lambda/invoke.ts', email],
    {
      cwd: ROOT,
      env: { ...process.env, ...BUILT_ENV, WEBHOOK_SECRET: 'whsec_example_test' },
      timeout: 30_000,
    },
  );
  expect(stdout).toContain(`user.created ${email}`);
  const result = JSON.parse(
    stdout
      .split('\n')
      .find((line) => line.startsWith('result '))!
      .slice(7),
  );
  // The HTTP API / Function URL answer: exactly statusCode, headers and body.
  expect(Object.keys(result).sort()).toEqual(['body', 'headers', 'statusCode']);
  expect(result.statusCode).toBe(200);
  expect(result.headers['content-type']).toMatch(/^application\/json/);
  expect(JSON.parse(result.body)).toEqual({ received: true });
});
