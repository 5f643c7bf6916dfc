/**
 * The package as users get it: `npm pack` the built package, install the tarball into a fresh project
 * that has NO framework installed (no express, fastify, next, hono, ioredis, @aws-sdk/client-dynamodb,
 * pg, bullmq), then load every subpath of package.json `exports` from ESM and from CJS. That an
 * adapter or a store loads at all there proves it never loads its framework or client library (or
 * any other subpath's); the CJS run also checks `require.cache`. The one exception is the inbox engine,
 * `service-webhooks/bullmq`, built on BullMQ's classes: without its peer it fails to load, naming it. The DynamoDB and PostgreSQL stores are then
 * driven with stand-in clients: PostgresStore needs nothing from `pg`, and DynamoDBStore, lacking the
 * SDK it loads on first use, fails as a store outage with the root's error class.
 */
import { execFile } from 'node:child_process';
import { access, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { consumerProject } from '../support/consumer-project.js';
import { assertBuilt, ROOT } from '../support/paths.js';

const run = promisify(execFile);
const FRAMEWORKS = [
  'express',
  'fastify',
  'next',
  'hono',
  'ioredis',
  '@aws-sdk/client-dynamodb',
  'pg',
  'bullmq',
];
/** Subpaths that need their optional peer to load at all. */
const NEEDS_PEER = { 'service-webhooks/bullmq': 'bullmq' };

/** Shared by both scripts; `load` is `import` or `require`. */
const body = (load: string) => `
const pkg = JSON.parse(readFileSync('./node_modules/service-webhooks/package.json', 'utf8'));
const subpaths = Object.keys(pkg.exports)
  .filter((key) => key !== './package.json')
  .map((key) => (key === '.' ? 'service-webhooks' : 'service-webhooks/' + key.slice(2)));
const loaded = {};
const refused = {};
for (const subpath of subpaths) {
  try {
    loaded[subpath] = Object.keys(await ${load}(subpath)).sort();
  } catch (error) {
    refused[subpath] = [error.code, String(error.message).includes("'bullmq'")];
  }
}

const { createWebhooks, WebhookError } = await ${load}('service-webhooks');
const { webHandler } = await ${load}('service-webhooks/web');
const { expressWebhooks } = await ${load}('service-webhooks/express');
const errors = [];
const webhooks = createWebhooks({ secret: 'whsec_consumer' }).onError((error) => errors.push(error));

// Errors raised inside two adapter subpaths are instances of the root's WebhookError: one core.
const used = new Request('http://consumer.test/webhooks', { method: 'POST', body: '{}' });
await used.text();
const webStatus = (await webHandler(webhooks)(used)).status;
// The Express adapter runs on plain node:http here (express is not installed): a parsed body is refused.
const expressStatus = await new Promise((resolve) => {
  const server = createServer(async (request, response) => {
    for await (const _ of request); // what express.json() does: read the stream, keep only the parse
    request.body = { parsed: true };
    expressWebhooks(webhooks)(request, response, () => {});
  });
  server.listen(0, '127.0.0.1', async () => {
    const answer = await fetch('http://127.0.0.1:' + server.address().port + '/webhooks', { method: 'POST', body: '{}' });
    server.close();
    resolve(answer.status);
  });
});
// The store subpaths with stand-ins for the clients the application would pass.
const { PostgresStore, postgresStoreMigration } = await ${load}('service-webhooks/postgres');
const queries = [];
const pool = { query: async (text, values) => (queries.push(values), { rows: [{ result: 'claimed' }], rowCount: 1 }) };
const postgres = {
  claim: await new PostgresStore({ pool }).claim('evt_1', 'token', 1000),
  values: queries[0],
  migration: postgresStoreMigration().startsWith('CREATE TABLE IF NOT EXISTS "webhook_events"'),
};
const { DynamoDBStore, DYNAMODB_STORE_ATTRIBUTES } = await ${load}('service-webhooks/dynamodb');
const dynamoStore = new DynamoDBStore({ client: { send: async () => ({}) }, tableName: 'webhook-events' });
const dynamodb = await dynamoStore.claim('evt_1', 'token', 1000).then(
  (answer) => ({ answer }),
  (error) => ({ code: error.code, root: error instanceof WebhookError, sdkMissing: error.message.includes('could not load @aws-sdk/client-dynamodb') }),
);
dynamodb.attributes = DYNAMODB_STORE_ATTRIBUTES;
const resolvable = ${JSON.stringify(FRAMEWORKS)}.filter((name) => {
  try { return Boolean(createRequire(process.cwd() + '/').resolve(name)); } catch { return false; }
});
`;

const ESM = `import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
${body('import')}
console.log(JSON.stringify({ loaded, refused, webStatus, expressStatus, errors: errors.map((e) => [e.code, e instanceof WebhookError]), postgres, dynamodb, resolvable }));
`;

const CJS = `const { readFileSync } = require('node:fs');
const { createServer } = require('node:http');
const { createRequire } = require('node:module');
(async () => {
${body('require')}
  const frameworkFiles = Object.keys(require.cache).filter((file) =>
    ${JSON.stringify(FRAMEWORKS)}.some((name) => file.includes('/node_modules/' + name + '/')),
  );
  console.log(JSON.stringify({ loaded, refused, webStatus, expressStatus, errors: errors.map((e) => [e.code, e instanceof WebhookError]), postgres, dynamodb, resolvable, frameworkFiles }));
})();
`;

let project: string;
let exportsMap: Record<string, unknown>;

beforeAll(async () => {
  assertBuilt();
  // Only lru-cache and fastify-plugin come from the registry (the npm cache first); the peers are
  // optional, so npm installs none of them.
  project = await consumerProject('consumer');
  exportsMap = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')).exports;
  await writeFile(join(project, 'check.mjs'), ESM);
  await writeFile(join(project, 'check.cjs'), CJS);
}, 120_000);

afterAll(async () => {
  if (project) await rm(project, { recursive: true, force: true });
});

for (const file of ['check.mjs', 'check.cjs']) {
  test(`${file === 'check.mjs' ? 'ESM' : 'CJS'}: every exported subpath loads without any framework installed`, async () => {
    const { stdout } = await run(process.execPath, [file], { cwd: project });
    const result = JSON.parse(stdout);
    const subpaths = Object.keys(exportsMap).filter((key) => key !== './package.json');
    expect(Object.keys(result.loaded)).toHaveLength(subpaths.length - Object.keys(NEEDS_PEER).length);
    // Without its peer the inbox engine fails at once, with the error naming the package to install.
    expect(result.refused).toEqual({
      'service-webhooks/bullmq': [file === 'check.mjs' ? 'ERR_MODULE_NOT_FOUND' : 'MODULE_NOT_FOUND', true],
    });
    for (const [subpath, names] of Object.entries(result.loaded)) {
      expect((names as string[]).length, subpath).toBeGreaterThan(0);
    }
    expect(result.resolvable).toEqual([]);
    expect(result.frameworkFiles ?? []).toEqual([]);
    expect(result.webStatus).toBe(500);
    expect(result.expressStatus).toBe(500);
    expect(result.errors).toEqual([
      ['raw_body_unavailable', true],
      ['raw_body_unavailable', true],
    ]);
    expect(result.loaded['service-webhooks/dynamodb']).toEqual([
      'DYNAMODB_STORE_ATTRIBUTES',
      'DynamoDBStore',
    ]);
    expect(result.loaded['service-webhooks/postgres']).toEqual(['PostgresStore', 'postgresStoreMigration']);
    expect(result.postgres).toEqual({ claim: 'claimed', values: ['evt_1', 'token', 1000], migration: true });
    expect(result.dynamodb).toEqual({
      code: 'store_unavailable',
      root: true,
      sdkMissing: true,
      attributes: { partitionKey: 'pk', timeToLive: 'expiresAt' },
    });
  }, 30_000);
}

test('the tarball ships the LICENSE, and the CommonJS DynamoDB store loads its SDK with require()', async () => {
  const installed = join(project, 'node_modules', 'service-webhooks');
  await expect(access(join(installed, 'LICENSE'))).resolves.toBeUndefined();
  expect(await readFile(join(installed, 'LICENSE'), 'utf8')).toContain(
    'Copyright (c) 2026 service-webhooks contributors',
  );
  // CommonJS test runners (Jest) refuse import() without --experimental-vm-modules.
  const cjs = await readFile(join(installed, 'dist', 'dynamodb.cjs'), 'utf8');
  expect(cjs).not.toMatch(/\bimport\(/);
  expect(cjs).toMatch(/require\(["']@aws-sdk\/client-dynamodb["']\)/);
});
