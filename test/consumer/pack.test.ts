/**
 * The package as users get it: `npm pack` the built package, install the tarball into a fresh project
 * that has NO framework installed (no express, fastify, next, hono, ioredis), then load every subpath
 * of package.json `exports` from ESM and from CJS. That an adapter loads at all there proves it never
 * loads its framework (or any other adapter's); the CJS run also checks `require.cache`.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { assertBuilt } from '../examples/run-example.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FRAMEWORKS = ['express', 'fastify', 'next', 'hono', 'ioredis'];

/** Shared by both scripts; `load` is `import` or `require`. */
const body = (load: string) => `
const pkg = JSON.parse(readFileSync('./node_modules/service-webhooks/package.json', 'utf8'));
const subpaths = Object.keys(pkg.exports)
  .filter((key) => key !== './package.json')
  .map((key) => (key === '.' ? 'service-webhooks' : 'service-webhooks/' + key.slice(2)));
const loaded = {};
for (const subpath of subpaths) loaded[subpath] = Object.keys(await ${load}(subpath)).sort();

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
const resolvable = ${JSON.stringify(FRAMEWORKS)}.filter((name) => {
  try { return Boolean(createRequire(process.cwd() + '/').resolve(name)); } catch { return false; }
});
`;

const ESM = `import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
${body('import')}
console.log(JSON.stringify({ loaded, webStatus, expressStatus, errors: errors.map((e) => [e.code, e instanceof WebhookError]), resolvable }));
`;

const CJS = `const { readFileSync } = require('node:fs');
const { createServer } = require('node:http');
const { createRequire } = require('node:module');
(async () => {
${body('require')}
  const frameworkFiles = Object.keys(require.cache).filter((file) =>
    ${JSON.stringify(FRAMEWORKS)}.some((name) => file.includes('/node_modules/' + name + '/')),
  );
  console.log(JSON.stringify({ loaded, webStatus, expressStatus, errors: errors.map((e) => [e.code, e instanceof WebhookError]), resolvable, frameworkFiles }));
})();
`;

let project: string;
let exportsMap: Record<string, unknown>;

beforeAll(async () => {
  assertBuilt();
  project = await mkdtemp(join(tmpdir(), 'service-webhooks-consumer-'));
  const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', project], {
    cwd: ROOT,
  });
  const [{ filename }] = JSON.parse(stdout) as [{ filename: string }];
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
  // Only lru-cache and fastify-plugin come from the registry (the npm cache first); the peers are
  // optional, so npm installs none of them.
  await run(
    'npm',
    ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts', join(project, filename)],
    { cwd: project },
  );
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
    expect(Object.keys(result.loaded)).toHaveLength(subpaths.length);
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
  }, 30_000);
}
