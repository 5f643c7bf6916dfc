/**
 * Issue 31: an app with more than one copy of `@opentelemetry/api`, in a consumer project that
 * installs the packed tarball. The app's own copy (the one `service-webhooks/opentelemetry` loads) is
 * 1.8.0; the SDK (2.x) registers its tracer provider and context manager through the app's copy, or
 * through another one, as an SDK or a distribution that depends on its own API does: 1.9.1, a minor
 * version AHEAD of the app's, or 1.7.0, one BEHIND it.
 *
 * By the API's own rule a copy reads what a copy of its major with the same or a newer minor version
 * registered, never an older one. So:
 * - through the app's copy or the newer one, every delivery is a span, whether the SDK starts before
 *   or after `openTelemetry()` is called;
 * - through the older one, `openTelemetry()` throws a ConfigurationError (`invalid_configuration`)
 *   that says why; when the SDK registers after it was called, the first delivery warns once and
 *   every delivery is still answered 200.
 */
import { execFile } from 'node:child_process';
import { copyFile, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { consumerProject } from '../support/consumer-project.js';
import { assertBuilt, repoPath } from '../support/paths.js';

const run = promisify(execFile);

/** The SDK version the repository tests against, so the project installs from the npm cache. */
async function installedVersion(name: string): Promise<string> {
  const manifest = JSON.parse(await readFile(repoPath('node_modules', name, 'package.json'), 'utf8'));
  return (manifest as { version: string }).version;
}

interface Result {
  thrown?: { name: string; code: string; message: string };
  statuses?: number[];
  warnings?: string[];
  deliveries?: { outcome: string; children: string[] }[];
  handlerSpans?: number;
}

let project: string;

beforeAll(async () => {
  assertBuilt('opentelemetry.js');
  const sdk = await installedVersion('@opentelemetry/sdk-trace-base');
  const contextManager = await installedVersion('@opentelemetry/context-async-hooks');
  project = await consumerProject('otel-api-copies', [
    '@opentelemetry/api@1.8.0',
    'otel-api-next@npm:@opentelemetry/api@1.9.1',
    'otel-api-old@npm:@opentelemetry/api@1.7.0',
    `@opentelemetry/sdk-trace-base@${sdk}`,
    `@opentelemetry/context-async-hooks@${contextManager}`,
  ]);
  await copyFile(
    new URL('./fixtures/consumer/api-copies.mjs', import.meta.url),
    join(project, 'api-copies.mjs'),
  );
}, 120_000);

afterAll(async () => {
  if (project) await rm(project, { recursive: true, force: true });
});

/** Register the SDK through `via`'s copy of the API, `when` relative to openTelemetry(). */
async function registered(via: 'app' | 'next' | 'old', when: 'before' | 'after'): Promise<Result> {
  const { stdout } = await run(process.execPath, ['api-copies.mjs', via, when], { cwd: project });
  return JSON.parse(stdout) as Result;
}

const TRACED = {
  statuses: [200, 200, 200],
  warnings: [],
  deliveries: Array.from({ length: 3 }, () => ({
    outcome: 'handled',
    // The memory store answers at once: no step spans, only the handler's own.
    children: ['send welcome mail'],
  })),
  handlerSpans: 3,
};

test('the project holds the three copies, and the library resolves the app’s own', async () => {
  const { stdout } = await run(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { readFileSync } from 'node:fs';
       import { createRequire } from 'node:module';
       const fromLibrary = createRequire(import.meta.resolve('service-webhooks/opentelemetry'));
       const fromApp = createRequire(import.meta.url);
       // The API's exports hide its package.json: read the one above the file it resolves to.
       const version = (main) => JSON.parse(readFileSync(main.slice(0, main.indexOf('/build/')) + '/package.json', 'utf8')).version;
       console.log(JSON.stringify([
         version(fromLibrary.resolve('@opentelemetry/api')),
         version(fromApp.resolve('otel-api-next')),
         version(fromApp.resolve('otel-api-old')),
       ]));`,
    ],
    { cwd: project },
  );
  expect(JSON.parse(stdout)).toEqual(['1.8.0', '1.9.1', '1.7.0']);
});

describe.each(['before', 'after'] as const)('the SDK registered %s openTelemetry() is called', (when) => {
  test('through the app’s own copy (the control): every delivery is a span, with the handler’s inside', async () => {
    expect(await registered('app', when)).toEqual(TRACED);
  });

  test('through a newer minor version (1.9.1 over the app’s 1.8.0), which the app’s copy reads: the same', async () => {
    expect(await registered('next', when)).toEqual(TRACED);
  });
});

describe('the SDK registered through an older minor version (1.7.0 under the app’s 1.8.0), which the app’s copy cannot read', () => {
  test('before: openTelemetry() throws a ConfigurationError that says which copy and what to do', async () => {
    const { thrown } = await registered('old', 'before');
    expect(thrown).toMatchObject({ name: 'ConfigurationError', code: 'invalid_configuration' });
    expect(thrown!.message).toContain(
      'the OpenTelemetry SDK registered its tracer provider, context manager with @opentelemetry/api 1.7.0',
    );
    expect(thrown!.message).toContain(
      'cannot read them (a copy reads only what the same or a newer minor version of its major registered)',
    );
    expect(thrown!.message).toContain('npm ls @opentelemetry/api');
  });

  test('after: one warning at the first delivery (not one per delivery), and every delivery answered 200', async () => {
    const result = await registered('old', 'after');
    expect(result.statuses).toEqual([200, 200, 200]);
    expect(result.warnings).toHaveLength(1);
    expect(result.warnings![0]).toMatch(
      /^\[service-webhooks\] the OpenTelemetry SDK registered its tracer provider, context manager with @opentelemetry\/api 1\.7\.0/,
    );
    // The app's own copy cannot read the SDK either: nothing is recorded, which is what the warning says.
    expect(result.deliveries).toEqual([]);
    expect(result.handlerSpans).toBe(0);
  });
});
