/**
 * What a Lambda's first delivery pays for (issue 46, part 2). A cold start is the import plus the first
 * delivery, timed in a fresh process; every Node subsystem that loads on first use (perf_hooks behind
 * the global `performance`, Web Crypto behind the global `crypto`) adds a fraction of a millisecond to
 * it. The brought-store function may load node:crypto's modules at import, which verifying needs, and
 * nothing else; its first delivery loads nothing. Bundled from the sources with esbuild, as a Lambda
 * deployment bundles it, and run on plain `node`, where only the function can load anything.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { SIGNATURE_HEADER, signPayload } from 'service-webhooks';
import { createTestEvent } from 'service-webhooks/testing';
import { afterAll, describe, expect, test } from 'vitest';
import { functionUrlEvent } from '../adapters/fixtures/lambda-events.js';
import { BROUGHT_STORE, lambdaFunctionSource } from '../support/lambda-bundle.js';
import { repoPath } from '../support/paths.js';

const SECRET = 'whsec_bundle';
const RUNNER = fileURLToPath(new URL('./fixtures/first-delivery.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sw-first-delivery-'));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface ColdStart {
  status: number;
  byImport: string[];
  byDelivery: string[];
}

/** Bundle `contents` (ESM, minified, node20, the package mapped to the sources) and run one cold start. */
async function coldStart(name: string, contents: string): Promise<ColdStart> {
  const bundle = join(dir, `${name}.mjs`);
  await build({
    stdin: { contents, resolveDir: repoPath('test'), loader: 'ts' },
    outfile: bundle,
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    tsconfig: repoPath('tsconfig.json'),
    logLevel: 'error',
  });
  const body = new TextEncoder().encode(JSON.stringify(createTestEvent('user.created')));
  const eventFile = join(dir, `${name}-event.json`);
  const headers = { 'content-type': 'application/json', [SIGNATURE_HEADER]: signPayload(body, SECRET) };
  writeFileSync(
    eventFile,
    JSON.stringify(functionUrlEvent({ method: 'POST', headers, body, base64: false })),
  );
  const { NODE_OPTIONS: _loader, ...env } = process.env;
  const child = spawnSync(process.execPath, [RUNNER, bundle, eventFile], { encoding: 'utf8', env });
  if (child.status !== 0) throw new Error(`the ${name} cold start failed:\n${child.stderr}`);
  return JSON.parse(child.stdout) as ColdStart;
}

describe('a Lambda cold start loads no Node subsystem it can do without', () => {
  test('the brought-store function loads node:crypto at import and nothing in its first delivery', async () => {
    const ours = await coldStart('core', lambdaFunctionSource('service-webhooks/core', BROUGHT_STORE));
    const cryptoAlone = await coldStart(
      'crypto',
      "import { createHmac } from 'node:crypto';\nexport const handler = async () => ({ statusCode: createHmac('sha256', 'k').digest().length > 0 ? 200 : 500 });",
    );
    expect(ours.status).toBe(200);
    expect(ours.byDelivery).toEqual([]);
    expect(ours.byImport.filter((name) => !cryptoAlone.byImport.includes(name))).toEqual([]);
  });

  test('with the default memory store, the first delivery loads nothing either', async () => {
    const ours = await coldStart('root', lambdaFunctionSource('service-webhooks', undefined));
    expect(ours.status).toBe(200);
    expect(ours.byDelivery).toEqual([]);
  });
});
