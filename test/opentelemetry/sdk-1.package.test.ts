/**
 * Issue 31 with the OpenTelemetry JS SDK 1.x (`@opentelemetry/sdk-trace-base`, `sdk-metrics` and
 * `context-async-hooks` 1.30, `@opentelemetry/api` 1.9), which many apps still run: in a consumer
 * project on the packed tarball, with the providers registered globally or passed to
 * `openTelemetry()`, a delivery is a `webhook.delivery` span with the handler's span and the store's
 * steps inside it, a forged one a span of its own, and both are counted in `webhook.deliveries`, the
 * durations in the plug-in's own buckets. The rest of the telemetry tests run on the SDK 2.x.
 */
import { execFile } from 'node:child_process';
import { copyFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { consumerProject } from '../support/consumer-project.js';
import { assertBuilt } from '../support/paths.js';

const run = promisify(execFile);
const SDK_1 = '1.30.1';
/** The plug-in's bucket boundaries (src/opentelemetry/instruments.ts), which the SDK takes as advice. */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 25, 30];

let project: string;

beforeAll(async () => {
  assertBuilt('opentelemetry.js');
  project = await consumerProject('otel-sdk-1', [
    '@opentelemetry/api@1.9.1',
    `@opentelemetry/sdk-trace-base@${SDK_1}`,
    `@opentelemetry/sdk-metrics@${SDK_1}`,
    `@opentelemetry/context-async-hooks@${SDK_1}`,
  ]);
  await copyFile(new URL('./fixtures/consumer/sdk-1.mjs', import.meta.url), join(project, 'sdk-1.mjs'));
}, 120_000);

afterAll(async () => {
  if (project) await rm(project, { recursive: true, force: true });
});

test('the project runs the SDK 1.x', async () => {
  const { stdout } = await run('npm', ['ls', '--json', '--depth=0'], { cwd: project });
  const { dependencies } = JSON.parse(stdout) as { dependencies: Record<string, { version: string }> };
  expect(dependencies['@opentelemetry/sdk-trace-base']?.version).toBe(SDK_1);
  expect(dependencies['@opentelemetry/sdk-metrics']?.version).toBe(SDK_1);
  expect(dependencies['@opentelemetry/api']?.version).toBe('1.9.1');
});

test.each(['global', 'explicit'] as const)(
  'providers %s: spans and metrics as with the SDK 2.x',
  async (mode) => {
    const { stdout } = await run(process.execPath, ['sdk-1.mjs', mode], { cwd: project });
    const result = JSON.parse(stdout);
    expect(result.statuses).toEqual([200, 401]);
    expect(result.deliveries).toEqual([
      {
        attributes: {
          'webhook.event.id': result.eventId,
          'webhook.event.type': 'user.created',
          'webhook.secret.index': 0,
          'webhook.outcome': 'handled',
          'http.response.status_code': 200,
        },
        // The memory store answers at once: no step spans, only the handler's own.
        children: ['send welcome mail'],
      },
      {
        attributes: {
          'webhook.outcome': 'rejected',
          'http.response.status_code': 401,
          'error.type': 'invalid_signature',
        },
        children: [],
      },
    ]);
    expect(result.points['webhook.deliveries']).toEqual([
      { attributes: { 'webhook.outcome': 'handled', 'webhook.event.type': 'user.created' }, value: 1 },
      { attributes: { 'webhook.outcome': 'rejected', 'error.type': 'invalid_signature' }, value: 1 },
    ]);
    expect(result.points['webhook.handler.duration']).toEqual([
      {
        attributes: { 'webhook.event.type': 'user.created', 'webhook.outcome': 'succeeded' },
        value: { count: 1, boundaries: BUCKETS },
      },
    ]);
    expect(result.points['webhook.delivery.duration']).toHaveLength(2);
  },
);
