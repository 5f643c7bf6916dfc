/**
 * A standalone sandbox on loopback refuses what a page on another site can send it: a request that
 * reached it through DNS rebinding (its `Host` names the attacker's site) or a cross-origin form or
 * `fetch` (its `Origin`). Any well-formed `sk_test_` key is valid in the sandbox, so without this
 * check any page could drive it. Bound to another address (a container's 0.0.0.0), it is reached by
 * names it cannot know, and it checks nothing. node:http lets a test set `Host`; fetch does not.
 */
import { type IncomingHttpHeaders, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { api } from './support.js';

function raw(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const call = request({ host: '127.0.0.1', port, path, method, headers }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
      });
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text }),
      );
    });
    call.on('error', reject);
    call.end(body);
  });
}

let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, allowHttp: true, timeScale: 0.001 });
});

afterAll(async () => {
  await sandbox?.close();
});

describe('the sandbox on loopback', () => {
  const key = 'sk_test_rebinding';
  const cases = () =>
    [
      [{ host: `rebind.attacker.example:${sandbox.port}` }, 'host_not_allowed'],
      [{ host: `127.0.0.1:${sandbox.port + 1}` }, 'host_not_allowed'],
      [{ host: `127.0.0.1:${sandbox.port}`, origin: 'http://attacker.example' }, 'origin_not_allowed'],
      [{ host: `127.0.0.1:${sandbox.port}`, origin: 'null' }, 'origin_not_allowed'],
    ] as const;

  it('refuses a rebinding Host and a foreign Origin on /v1 and /oauth, and nothing is created', async () => {
    const routes: [string, string, string?][] = [
      ['GET', '/v1/webhooks'],
      ['POST', '/v1/users', JSON.stringify({ name: 'Mallory', email: 'mallory@example.com' })],
      ['POST', '/v1/webhooks', JSON.stringify({ url: 'http://127.0.0.1:9/x', events: ['user.created'] })],
      ['GET', '/oauth/authorize?response_type=code&client_id=x'],
      ['POST', '/oauth/token', 'grant_type=authorization_code'],
    ];
    for (const [headers, code] of cases()) {
      for (const [method, path, body] of routes) {
        const answer = await raw(
          sandbox.port,
          method,
          path,
          { ...headers, authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body,
        );
        const what = `${JSON.stringify(headers)} ${method} ${path}`;
        expect({ what, status: answer.status }).toEqual({ what, status: 403 });
        expect(answer.headers['content-type']).toContain('application/json');
        expect(JSON.parse(answer.body)).toMatchObject({ error: { code, message: expect.any(String) } });
      }
    }
    expect((await api(sandbox.url, 'GET', '/users', undefined, key)).body).toMatchObject({ data: [] });
    expect((await api(sandbox.url, 'GET', '/webhooks', undefined, key)).body).toMatchObject({ data: [] });
  });

  it('answers its own names: 127.0.0.1, localhost and [::1] with its port, and its own Origin', async () => {
    for (const host of [`127.0.0.1:${sandbox.port}`, `localhost:${sandbox.port}`, `[::1]:${sandbox.port}`]) {
      const answer = await raw(sandbox.port, 'GET', '/v1/users', {
        host,
        origin: `http://${host}`,
        authorization: `Bearer ${key}`,
      });
      expect({ host, status: answer.status }).toEqual({ host, status: 200 });
    }
  });
});

describe('the sandbox bound to another address', () => {
  it('checks no Host: it cannot know the names it is reached by', async () => {
    const open = await startSandbox({ port: 0, host: '0.0.0.0' });
    try {
      const answer = await raw(open.port, 'GET', '/v1/users', {
        host: `sandbox.internal:${open.port}`,
        authorization: 'Bearer sk_test_container',
      });
      expect(answer.status).toBe(200);
    } finally {
      await open.close();
    }
  });
});
