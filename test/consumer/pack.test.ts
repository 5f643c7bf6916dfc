/**
 * The package as users get it: `npm pack` the built package, install the tarball into a fresh project
 * that has NO framework installed (no express, fastify, next, hono, ioredis, @aws-sdk/client-dynamodb,
 * pg, bullmq), then load every subpath of package.json `exports` from ESM and from CJS. That an
 * adapter or a store loads at all there proves it never loads its framework or client library (or
 * any other subpath's); the CJS run also checks `require.cache`. The one exception is the inbox engine,
 * `service-webhooks/bullmq`, built on BullMQ's classes: without its peer it fails to load, naming it. The DynamoDB and PostgreSQL stores are then
 * driven with stand-in clients: PostgresStore needs nothing from `pg`, and DynamoDBStore, lacking the
 * SDK it loads on first use, fails as a store outage with the root's error class.
 *
 * The root is `service-webhooks/core` plus MemoryStore: both formats load one copy of the core (the root
 * re-exports it by name, and MemoryStore's errors and synchronous calls are the core's), and a function
 * bundled by esbuild from the tarball with `createWebhooks` from the core carries neither MemoryStore nor
 * lru-cache.
 */
import { execFile } from 'node:child_process';
import { access, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { documentationFiles } from '../../scripts/docs/snippets.mjs';
import { consumerProject } from '../support/consumer-project.js';
import { BROUGHT_STORE, bundledFiles, lambdaFunctionSource } from '../support/lambda-bundle.js';
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
// service-webhooks/pg-boss is not here: it never imports pg-boss (it drives the instance it is given),
// so it loads without it.
const NEEDS_PEER = {
  'service-webhooks/bullmq': 'bullmq',
  'service-webhooks/opentelemetry': '@opentelemetry/api',
  'service-webhooks/sqs': '@aws-sdk/client-sqs',
  // The first of its two peers the bundle imports.
  'service-webhooks/nats': '@nats-io/jetstream',
  'service-webhooks/rabbitmq': 'amqplib',
};

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
    const peer = ${JSON.stringify(NEEDS_PEER)}[subpath];
    refused[subpath] = [error.code, peer !== undefined && String(error.message).includes("'" + peer + "'")];
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
// One core: the root re-exports the core's objects, and the root's MemoryStore throws the core's error
// classes and offers its synchronous calls under the core's (registered) symbol.
const root = await ${load}('service-webhooks');
const core = await ${load}('service-webhooks/core');
const storeError = (() => { try { new root.MemoryStore({ maxEvents: 0 }); } catch (error) { return error; } })();
const noStore = (() => { try { core.createWebhooks({ secret: 'whsec_consumer' }); } catch (error) { return error; } })();
const onCore = core.createWebhooks({ secret: 'whsec_consumer', store: new root.MemoryStore() });
const coreBody = JSON.stringify({ id: 'evt_core', type: 'user.created', created: Math.floor(Date.now() / 1000), data: {}, livemode: false });
const coreAnswer = await onCore.handle({ body: coreBody, headers: { 'x-service-signature': core.signPayload(coreBody, 'whsec_consumer') } });
const oneCore = {
  sameClasses: ['WebhookError', 'ConfigurationError', 'STATUS_TABLE', 'verifySignature'].every((name) => root[name] === core[name]),
  coreHasMemoryStore: 'MemoryStore' in core,
  storeErrorIsCores: storeError instanceof core.ConfigurationError && storeError instanceof WebhookError,
  offersSynchronousCalls: typeof new root.MemoryStore()[Symbol.for('service-webhooks.synchronousCalls')] === 'function',
  noStore: [noStore instanceof core.ConfigurationError, String(noStore?.message).startsWith('\`store\` is missing')],
  coreAnswer: coreAnswer.status,
};
const resolvable = ${JSON.stringify(FRAMEWORKS)}.filter((name) => {
  try { return Boolean(createRequire(process.cwd() + '/').resolve(name)); } catch { return false; }
});
`;

const ESM = `import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
${body('import')}
console.log(JSON.stringify({ loaded, refused, webStatus, expressStatus, errors: errors.map((e) => [e.code, e instanceof WebhookError]), postgres, dynamodb, oneCore, resolvable }));
`;

const CJS = `const { readFileSync } = require('node:fs');
const { createServer } = require('node:http');
const { createRequire } = require('node:module');
(async () => {
${body('require')}
  const frameworkFiles = Object.keys(require.cache).filter((file) =>
    ${JSON.stringify(FRAMEWORKS)}.some((name) => file.includes('/node_modules/' + name + '/')),
  );
  console.log(JSON.stringify({ loaded, refused, webStatus, expressStatus, errors: errors.map((e) => [e.code, e instanceof WebhookError]), postgres, dynamodb, oneCore, resolvable, frameworkFiles }));
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
    // Without its peer the inbox engine or the telemetry plug-in fails at once, with the error naming
    // the package to install.
    const notFound = file === 'check.mjs' ? 'ERR_MODULE_NOT_FOUND' : 'MODULE_NOT_FOUND';
    expect(result.refused).toEqual({
      'service-webhooks/bullmq': [notFound, true],
      'service-webhooks/opentelemetry': [notFound, true],
      'service-webhooks/sqs': [notFound, true],
      'service-webhooks/nats': [notFound, true],
      'service-webhooks/rabbitmq': [notFound, true],
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
    expect(result.loaded['service-webhooks/postgres']).toEqual([
      'PostgresFlowControl',
      'PostgresStore',
      'postgresFlowControlMigration',
      'postgresStoreMigration',
    ]);
    expect(result.postgres).toEqual({ claim: 'claimed', values: ['evt_1', 'token', 1000], migration: true });
    expect(result.dynamodb).toEqual({
      code: 'store_unavailable',
      root: true,
      sdkMissing: true,
      attributes: { partitionKey: 'pk', timeToLive: 'expiresAt' },
    });
    expect(result.oneCore).toEqual({
      sameClasses: true,
      coreHasMemoryStore: false,
      storeErrorIsCores: true,
      offersSynchronousCalls: true,
      noStore: [true, true],
      coreAnswer: 200,
    });
  }, 30_000);
}

test('one copy of the core: only core.js and core.cjs hold it; the root adds MemoryStore and imports the core by name', async () => {
  const dist = join(project, 'node_modules', 'service-webhooks', 'dist');
  // A message of the status table: the core's text, which no other file of dist/ may hold.
  const marker = 'The x-service-signature header is missing.';
  const files = (await readdir(dist)).filter((file) => /\.c?js$/.test(file));
  expect(files).toEqual(
    expect.arrayContaining(['core.js', 'core.cjs', 'index.js', 'index.cjs', 'lambda.js']),
  );
  for (const file of files) {
    const text = await readFile(join(dist, file), 'utf8');
    expect(text.includes(marker), file).toBe(file === 'core.js' || file === 'core.cjs');
    // lru-cache (MemoryStore) is imported by the root alone.
    expect(/["']lru-cache["']/.test(text), file).toBe(file === 'index.js' || file === 'index.cjs');
  }
  expect(await readFile(join(dist, 'index.js'), 'utf8')).toMatch(/from ["']service-webhooks\/core["']/);
  expect(await readFile(join(dist, 'index.cjs'), 'utf8')).toMatch(
    /require\(["']service-webhooks\/core["']\)/,
  );
});

test('a Lambda function bundled from the tarball: on the core with a brought store, no MemoryStore and no lru-cache', async () => {
  const inputs = (from: string, store: string | undefined) =>
    bundledFiles(lambdaFunctionSource(from, store), project);
  const brought = await inputs('service-webhooks/core', BROUGHT_STORE);
  expect(brought.filter((input) => input.startsWith('service-webhooks/')).sort()).toEqual([
    'service-webhooks/dist/core.js',
    'service-webhooks/dist/lambda.js',
  ]);
  expect(brought.filter((input) => input.startsWith('lru-cache/'))).toEqual([]);
  // The control: from the root, the default store and lru-cache are in.
  const memory = await inputs('service-webhooks', undefined);
  expect(memory).toContain('service-webhooks/dist/index.js');
  expect(memory.some((input) => input.startsWith('lru-cache/'))).toBe(true);
});

test('the tarball ships the LICENSE and the CHANGELOG, says where its repository, docs and tracker are, and the CommonJS DynamoDB store loads its SDK with require()', async () => {
  const installed = join(project, 'node_modules', 'service-webhooks');
  await expect(access(join(installed, 'LICENSE'))).resolves.toBeUndefined();
  expect(await readFile(join(installed, 'CHANGELOG.md'), 'utf8')).toMatch(/^## \d+\.\d+\.\d+/m);
  // npm and GitHub resolve the README's relative links (examples/, bench/RESULTS.md) through `repository`.
  const manifest = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8'));
  expect(manifest.repository.url).toMatch(/^git\+https:\/\/github\.com\/.+\.git$/);
  expect(manifest.homepage).toMatch(/^https:\/\//);
  expect(manifest.bugs.url).toMatch(/\/issues$/);
  expect(await readFile(join(installed, 'LICENSE'), 'utf8')).toContain(
    'Copyright (c) 2026 service-webhooks contributors',
  );
  // CommonJS test runners (Jest) refuse import() without --experimental-vm-modules.
  const cjs = await readFile(join(installed, 'dist', 'dynamodb.cjs'), 'utf8');
  expect(cjs).not.toMatch(/\bimport\(/);
  expect(cjs).toMatch(/require\(["']@aws-sdk\/client-dynamodb["']\)/);
});

test('the tarball ships AGENTS.md, version-matched, and every docs page as Markdown in dist/docs', async () => {
  // What `npm pack --dry-run` lists is what npm publishes.
  const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT });
  const [{ files }] = JSON.parse(stdout) as [{ files: { path: string; size: number }[] }];
  const listed = new Map(files.map((file) => [file.path, file.size]));
  expect(listed.has('AGENTS.md')).toBe(true);
  const pages = documentationFiles()
    .filter((page) => page !== 'README.md')
    .map((page) => `dist/${page}`);
  expect(pages.length).toBeGreaterThan(30);
  for (const page of pages) expect(listed.has(page), page).toBe(true);
  // The MCP endpoint's chunk, which the bin loads on demand.
  expect([...listed.keys()].some((path) => /^dist\/cli-chunks\/mcp-endpoint-.+\.js$/.test(path))).toBe(true);

  const installed = join(project, 'node_modules', 'service-webhooks');
  const agents = await readFile(join(installed, 'AGENTS.md'), 'utf8');
  expect(agents).toBe(await readFile(join(ROOT, 'AGENTS.md'), 'utf8'));
  expect(agents).toContain(
    `service-webhooks@${JSON.parse(await readFile(join(installed, 'package.json'), 'utf8')).version}`,
  );
  // The copies are what a reader gets: no hidden snippet lines.
  const start = await readFile(join(installed, 'dist', 'docs', 'guide', 'getting-started.md'), 'utf8');
  expect(start).toMatch(/^# /);
  expect(start).not.toMatch(/^\s*\/\/ ---cut---$/m);
});
