/**
 * The Next.js adapter in a real Next.js app (examples/next), built with `next build` against the built
 * package and served by `next start`: the shared table runs over real HTTP against the App Router
 * route on the Node.js runtime, the same route on the Edge runtime, and the Pages Router route.
 *
 * The handlers that ran inside Next.js must be observable here: the example relays every event it
 * verified and deduplicated to WEBHOOK_TEST_RELAY_URL, where the table's own receiver runs the table's
 * handlers. Its own `user.created` handler also logs a line, which is checked on the server's stdout.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Webhooks } from 'service-webhooks';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { repoPath } from '../support/paths.js';
import { type SpawnedProcess, spawnProcess } from '../support/process.js';
import { runtimesPath } from '../support/runtimes.js';
import { MAX_BODY_BYTES, runAdapterCases, SECRET, signedRequest } from './adapter-cases.js';
import { sendHttp } from './http-client.js';

const appDir = repoPath('examples', 'next');
// Next.js and React come from the side install of scripts/side-installs/runtimes (test/support/runtimes.ts), which
// the package tier's globalSetup installs and links as examples/next/node_modules for the app's imports.
const nextBin = runtimesPath('next', 'dist', 'bin', 'next');
const BUILD_TIMEOUT_MS = 600_000;

let target: Webhooks | undefined;
let relay: Server;
let next: SpawnedProcess | undefined;
let baseUrl = '';
/** What `next start` printed, stdout and stderr. */
const output = () => next?.combined() ?? '';

beforeAll(async () => {
  relay = createServer(async (request, response) => {
    // The event arrives verified and parsed; sign its JSON again so the table's receiver accepts it.
    const json = await readText(request);
    if (!target) return void response.writeHead(204).end();
    const result = await target.handle({
      body: json,
      headers: { 'x-service-signature': signPayload(json, SECRET) },
    });
    // The table's handler was rate limited: told to the app's handler as its downstream's 429.
    const limited = result.status === 503 && result.body.includes('"rate_limited"');
    if (limited) return void response.writeHead(429, { 'retry-after': result.headers['retry-after']! }).end();
    response.writeHead(result.status).end();
  });
  const relayPort = await listen(relay);
  const env = {
    ...process.env,
    NEXT_TELEMETRY_DISABLED: '1',
    WEBHOOK_SECRET: SECRET,
    WEBHOOK_MAX_BODY_BYTES: String(MAX_BODY_BYTES),
    WEBHOOK_TEST_RELAY_URL: `http://127.0.0.1:${relayPort}/`,
  };
  // Set NEXT_EXAMPLE_REUSE_BUILD=1 to skip the build while iterating on the tests alone.
  if (process.env.NEXT_EXAMPLE_REUSE_BUILD !== '1') {
    const started = performance.now();
    // Built without the secret, as a Docker image built once for every environment is: the routes
    // give it as a function, read on the first delivery. It is there at run time (next start, below).
    const { WEBHOOK_SECRET: _atRunTimeOnly, ...buildEnv } = env;
    await run(process.execPath, [nextBin, 'build', appDir], buildEnv);
    console.info(`next build took ${Math.round((performance.now() - started) / 1000)} s`);
  }
  const port = await freePort();
  next = spawnProcess(
    process.execPath,
    [nextBin, 'start', appDir, '--port', String(port), '--hostname', '127.0.0.1'],
    { name: 'next start', env },
  );
  baseUrl = `http://127.0.0.1:${port}`;
  await waitUntilServing(baseUrl);
}, BUILD_TIMEOUT_MS);

afterAll(async () => {
  await next?.stop();
  await new Promise((resolve) => relay?.close(resolve));
});

function routeClient(path: string) {
  return async (webhooks: Webhooks) => {
    target = webhooks;
    return {
      send: (sent: Parameters<typeof sendHttp>[1]) => sendHttp(baseUrl + path, sent),
      close: async () => {},
    };
  };
}

// Only POST is exported from the route files, so Next.js answers other methods 405 itself.
runAdapterCases({
  name: 'next App Router (Node.js runtime)',
  ownsRoute: false,
  start: routeClient('/webhooks'),
});
runAdapterCases({
  name: 'next App Router (Edge runtime)',
  ownsRoute: false,
  start: routeClient('/webhooks/edge'),
});
runAdapterCases({
  name: 'next Pages Router',
  ownsRoute: true,
  framedOnTheWire: true,
  start: routeClient('/api/webhooks'),
});

describe('next: the example app', () => {
  test.each(['/webhooks', '/webhooks/edge', '/api/webhooks'])(
    "%s: the example's own handler ran inside Next.js",
    async (path) => {
      target = undefined;
      const event = createTestEvent('user.created');
      // No relay target: only the example's own handler is observed, through its log line.
      await sendHttp(baseUrl + path, signedRequest(JSON.stringify(event)));
      await expect.poll(output).toContain(`user.created ${event.id} ${event.data.email}`);
    },
  );

  test('Pages route with the body parser left on: 500 raw_body_unavailable, and the error names the fix', async () => {
    const event = createTestEvent('user.created');
    const response = await sendHttp(
      `${baseUrl}/api/body-parser-left-on`,
      signedRequest(JSON.stringify(event)),
    );
    expect(response.status).toBe(500);
    expect(JSON.parse(response.body).error.code).toBe('raw_body_unavailable');
    // The public message stays generic; the fix goes to onError, here the server's stderr.
    await expect.poll(output).toContain('export const config = { api: { bodyParser: false } }');
    expect(output()).not.toContain(`user.created ${event.id}`);
  });

  test('the edge route was built for the Edge runtime, the others for Node.js', async () => {
    const manifest = JSON.parse(
      await readFile(repoPath('examples', 'next', '.next', 'server', 'middleware-manifest.json'), 'utf8'),
    ) as { functions: Record<string, unknown> };
    expect(Object.keys(manifest.functions)).toEqual(['/webhooks/edge/route']);
  });

  test('App Router route: GET is answered 405 by Next.js', async () => {
    const response = await sendHttp(`${baseUrl}/webhooks`, {
      method: 'GET',
      headers: {},
      body: new Uint8Array(),
    });
    expect(response.status).toBe(405);
  });
});

function readText(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
}

async function freePort(): Promise<number> {
  const probe = createServer();
  const port = await listen(probe);
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { env, timeout: BUILD_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`next build failed:\n${stdout}\n${stderr}`, { cause: error }));
        else resolve();
      },
    );
  });
}

async function waitUntilServing(url: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (next?.hasExited()) throw new Error(`next start exited:\n${output()}`);
    try {
      await fetch(url);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  throw new Error(`next start did not answer within 60 s:\n${output()}`);
}
