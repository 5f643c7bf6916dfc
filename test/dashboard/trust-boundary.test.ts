/**
 * `service-webhooks dev` at its trust boundary: a page on another site (by DNS rebinding, or by a
 * form or `fetch` from its own origin) reaches no route, the sandbox API's `/v1` and `/oauth` included;
 * the sandbox key is new at each start; the receiver's report token posts reports and nothing else;
 * a malformed path is a 400, not a dropped connection. Requests go through node:http, which lets a
 * test set `Host` as a rebinding page's request carries it (fetch does not).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, type IncomingHttpHeaders, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DevDelivery } from '../../src/dashboard/api-types.js';
import { type DevServer, startDevServer } from '../../src/dashboard/dev-server.js';
import { DEV_TOKEN_HEADER } from '../../src/dev/report.js';
import { devApi, startReceiver, type TestReceiver, writeStandInPage } from './support.js';

const SECRET = 'whsec_trust_boundary_secret';
const TOKEN = 'a-page-token-for-the-trust-tests';
// The key the sandbox printed before each start had its own: passed explicitly here (the opt-in), so
// these tests show that even a known key is useless to a page on another site.
const KEY = 'sk_test_dev';

interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  reusedSocket: boolean;
}

function raw(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
  agent?: Agent,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const call = request({ host: '127.0.0.1', port, path, method, headers, agent }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
      });
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: text,
          reusedSocket: call.reusedSocket,
        }),
      );
    });
    call.on('error', reject);
    call.end(body);
  });
}

let folder: string;
let receiver: TestReceiver;
let dev: DevServer;
let webhookId: string;

const own = () => `127.0.0.1:${dev.port}`;
const api = (method: string, path: string, body?: unknown) =>
  raw(
    dev.port,
    method,
    path,
    { host: own(), authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body === undefined ? undefined : JSON.stringify(body),
  );

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'dev-trust-'));
  receiver = await startReceiver(SECRET);
  dev = await startDevServer({
    forward: receiver.url,
    secret: SECRET,
    port: 0,
    timeScale: 0.001,
    assetsFolder: await writeStandInPage(folder),
    token: TOKEN,
    apiKey: KEY,
  });
  const listed = await api('GET', '/v1/webhooks');
  expect(listed.status, listed.body).toBe(200);
  webhookId = (JSON.parse(listed.body) as { data: { id: string }[] }).data[0]!.id;
});

afterAll(async () => {
  await dev?.close();
  await receiver?.close();
  await rm(folder, { recursive: true, force: true });
});

describe('service-webhooks dev: one guard in front of every route, the sandbox API included', () => {
  const attacks = () => [
    {
      name: 'a rebinding Host',
      headers: { host: `rebind.attacker.example:${dev.port}` },
      code: 'host_not_allowed',
    },
    {
      name: 'a foreign Origin',
      headers: { host: own(), origin: 'http://attacker.example' },
      code: 'origin_not_allowed',
    },
  ];
  const routes = () => [
    { method: 'GET', path: '/v1/webhooks', body: undefined },
    { method: 'POST', path: '/v1/users', body: { name: 'Mallory', email: 'mallory@example.com' } },
    { method: 'PUT', path: `/v1/webhooks/${webhookId}`, body: { url: 'http://127.0.0.1:9/elsewhere' } },
    { method: 'POST', path: `/v1/webhooks/${webhookId}/test`, body: { type: 'user.created' } },
    { method: 'GET', path: '/v1/sandbox/deliveries', body: undefined },
    { method: 'GET', path: '/oauth/authorize?response_type=code&client_id=x', body: undefined },
    { method: 'POST', path: '/oauth/token', body: { grant_type: 'authorization_code' } },
  ];

  it('refuses a rebinding Host and a foreign Origin on /v1 and /oauth, with the status table JSON, and nothing happens', async () => {
    const runsBefore = receiver.runs.size;
    for (const attack of attacks()) {
      for (const route of routes()) {
        const answer = await raw(
          dev.port,
          route.method,
          route.path,
          { ...attack.headers, authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
          route.body === undefined ? undefined : JSON.stringify(route.body),
        );
        const what = `${attack.name} → ${route.method} ${route.path}`;
        expect({ what, status: answer.status }).toEqual({ what, status: 403 });
        expect(answer.headers['content-type']).toContain('application/json');
        expect(JSON.parse(answer.body)).toMatchObject({
          error: { code: attack.code, message: expect.any(String) },
        });
      }
    }
    // Nothing happened: no user, the registration still points at the receiver, no delivery left.
    const users = JSON.parse((await api('GET', '/v1/users')).body) as { data: { name: string }[] };
    expect(users.data.map((user) => user.name)).not.toContain('Mallory');
    const webhook = JSON.parse((await api('GET', `/v1/webhooks/${webhookId}`)).body) as { url: string };
    expect(webhook.url).toBe(receiver.url);
    const deliveries = JSON.parse((await api('GET', '/v1/sandbox/deliveries')).body) as { data: unknown[] };
    expect(deliveries.data).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(receiver.runs.size).toBe(runsBefore);
  });

  it('answers the same requests from its own Host and Origin', async () => {
    const answer = await raw(dev.port, 'GET', '/v1/webhooks', {
      host: `localhost:${dev.port}`,
      origin: `http://localhost:${dev.port}`,
      authorization: `Bearer ${KEY}`,
    });
    expect(answer.status).toBe(200);
    const token = await raw(
      dev.port,
      'POST',
      '/oauth/token',
      {
        host: own(),
        'content-type': 'application/x-www-form-urlencoded',
      },
      'grant_type=authorization_code',
    );
    // Past the guard: the authorization server's own answer (no client credentials).
    expect(token.status).not.toBe(403);
  });
});

describe('service-webhooks dev: the sandbox key is new at each start', () => {
  it('refuses sk_test_dev unless it was passed, and accepts the key it was started with', async () => {
    const first = await startDevServer({ forward: receiver.url, port: 0, assetsFolder: folder });
    const second = await startDevServer({ forward: receiver.url, port: 0, assetsFolder: folder });
    try {
      expect(first.apiKey).toMatch(/^sk_test_[A-Za-z0-9_]{32,}$/);
      expect(second.apiKey).toMatch(/^sk_test_[A-Za-z0-9_]{32,}$/);
      expect(first.apiKey).not.toBe(second.apiKey);
      const call = (server: DevServer, key: string) =>
        fetch(`${server.apiUrl}/webhooks`, { headers: { authorization: `Bearer ${key}` } });
      expect((await call(first, 'sk_test_dev')).status).toBe(401);
      expect((await call(first, second.apiKey)).status).toBe(401);
      const mine = await call(first, first.apiKey);
      expect(mine.status).toBe(200);
      // The key sees the dashboard's account: the registration for the receiver is there.
      expect(((await mine.json()) as { data: { url: string }[] }).data[0]?.url).toBe(receiver.url);
    } finally {
      await first.close();
      await second.close();
    }
  });
});

describe("service-webhooks dev: the receiver's report token posts reports and nothing else", () => {
  const reportToken = () => new URL(dev.reportUrl).searchParams.get('token')!;

  it('is not the page token', () => {
    expect(reportToken()).toBeTruthy();
    expect(reportToken()).not.toBe(TOKEN);
  });

  it('posts reports', async () => {
    const answer = await devApi(dev.url, reportToken(), 'POST', '/report', { records: [] });
    expect(answer).toMatchObject({ status: 200, body: { accepted: 0 } });
  });

  it('is refused with 403 insufficient_scope everywhere else: the secret, and every route that drives the dashboard', async () => {
    const sent = await devApi<{ data: DevDelivery[] }>(dev.url, TOKEN, 'POST', '/send', {
      type: 'user.created',
    });
    expect(sent.status).toBe(202);
    const id = sent.body.data[0]!.id;
    const runsAfterSend = () => receiver.runs.size;
    await expect.poll(runsAfterSend).toBeGreaterThan(0);
    const runs = receiver.runs.size;
    const refused: [string, string, unknown?][] = [
      ['GET', '/secret'],
      ['GET', '/state'],
      ['GET', '/deliveries'],
      ['DELETE', '/deliveries'],
      ['POST', '/send', { type: 'user.created' }],
      ['POST', `/deliveries/${id}/replay`],
      ['POST', `/deliveries/${id}/retry`],
      ['GET', `/deliveries/${id}/export?as=test`],
      ['GET', '/inbox'],
      ['POST', '/inbox/dead-letters/x/replay'],
      ['DELETE', '/inbox/dead-letters/x'],
      ['GET', `/events?token=${reportToken()}`],
    ];
    for (const [method, path, body] of refused) {
      const answer = await devApi(dev.url, reportToken(), method, path, body);
      const what = `${method} ${path}`;
      expect({ what, status: answer.status }).toEqual({ what, status: 403 });
      expect(answer.body).toMatchObject({ error: { code: 'insufficient_scope' } });
      expect(JSON.stringify(answer.body)).not.toContain(SECRET);
    }
    // The event stream takes its token from the query: the report token is refused there too.
    const stream = await fetch(new URL(`_dev/api/events?token=${reportToken()}`, dev.url));
    expect(stream.status).toBe(403);
    await stream.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(receiver.runs.size).toBe(runs);
    expect((await devApi(dev.url, TOKEN, 'GET', '/deliveries')).body).toMatchObject({ data: [{ id }] });
  });

  it('the page token still does everything, reports included', async () => {
    expect((await devApi(dev.url, TOKEN, 'GET', '/secret')).body).toEqual({ secret: SECRET });
    expect((await devApi(dev.url, TOKEN, 'POST', '/report', { records: [] })).status).toBe(200);
  });
});

describe('service-webhooks dev: a malformed percent-escape in a path', () => {
  it('is 400 invalid_request with a JSON body, and the connection stays usable', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const headers = { host: own(), [DEV_TOKEN_HEADER]: TOKEN };
      for (const path of [
        '/_dev/api/deliveries/%E0%A4%A',
        '/_dev/api/deliveries/%zz/export',
        '/_dev/api/%zz',
      ]) {
        const answer = await raw(dev.port, 'GET', path, headers, undefined, agent);
        expect({ path, status: answer.status }).toEqual({ path, status: 400 });
        expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'invalid_request' } });
      }
      const after = await raw(dev.port, 'GET', '/_dev/api/deliveries', headers, undefined, agent);
      expect(after.status).toBe(200);
      expect(after.reusedSocket).toBe(true);
    } finally {
      agent.destroy();
    }
  });

  it('is 400 INVALID_REQUEST on the sandbox API too, on the same connection', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const headers = { host: own(), authorization: `Bearer ${KEY}` };
      for (const path of ['/v1/users/%E0%A4%A', '/v1/webhooks/%zz', '/v1/sandbox/deliveries/%zz']) {
        const answer = await raw(dev.port, 'GET', path, headers, undefined, agent);
        expect({ path, status: answer.status }).toEqual({ path, status: 400 });
        expect(JSON.parse(answer.body)).toMatchObject({
          error: { code: 'INVALID_REQUEST', details: { field: 'path' } },
        });
      }
      const after = await raw(dev.port, 'GET', '/v1/users', headers, undefined, agent);
      expect(after.status).toBe(200);
      expect(after.reusedSocket).toBe(true);
    } finally {
      agent.destroy();
    }
  });
});
