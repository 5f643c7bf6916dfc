/**
 * The sandbox as users run it, a process of its own: the OAuth flags walked by a `fetch` client, and
 * delivery to an HTTPS receiver with a self-signed certificate, trusted through NODE_EXTRA_CA_CERTS as
 * the docs tell.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Delivery } from '../../src/sandbox/index.js';
import { authorizeUrl, type ClientConfig, call, exchangeCode, refresh } from '../sandbox/oauth-client.js';
import { api, type Child, requireBuiltCli, startSandboxProcess, waitFor } from './support.js';

const REDIRECT_URI = 'http://127.0.0.1:9/callback';

beforeAll(() => {
  requireBuiltCli();
});

describe('OAuth flags', () => {
  let sandbox: Child & { url: string };
  let client: ClientConfig;

  beforeAll(async () => {
    sandbox = await startSandboxProcess([
      '--oauth-client',
      `app:app-secret:${REDIRECT_URI},http://127.0.0.1:9/other`,
      '--oauth-auto-approve',
      '--token-ttl',
      '2',
    ]);
    client = {
      authUrl: sandbox.url.replace(/\/v1$/, ''),
      clientId: 'app',
      clientSecret: 'app-secret',
      redirectUri: REDIRECT_URI,
    };
  });

  afterAll(async () => {
    await sandbox?.stop();
  });

  it('prints the authorization server at start, and not the signing key', () => {
    expect(sandbox.output()).toContain(
      `oauth: ${client.authUrl}/oauth/authorize, ${client.authUrl}/oauth/token`,
    );
    expect(sandbox.output()).toMatch(/access tokens last 2 s, consent auto-approved/);
    expect(sandbox.output()).toContain('jwt: HS256, signing key not printed (--print-signing-key)');
  });

  it('walks the flow: authorize, exchange, call, expire, refresh; a read-only token may not write', async () => {
    const authorized = await fetch(authorizeUrl(client, { scope: 'read', state: 'p' }), {
      redirect: 'manual',
    });
    expect(authorized.status).toBe(302);
    const location = new URL(authorized.headers.get('location')!);
    expect(location.searchParams.get('state')).toBe('p');
    const tokens = await exchangeCode(client, location.searchParams.get('code')!);
    expect(tokens.status).toBe(200);
    const access = tokens.body.access_token as string;

    expect((await call(sandbox.url, 'GET', '/users', access)).status).toBe(200);
    const write = await call(sandbox.url, 'POST', '/users', access, { name: 'A', email: 'a@example.com' });
    expect(write.status).toBe(403);
    expect(write.body).toMatchObject({ error: { code: 'insufficient_scope' } });

    const expired = await waitFor(
      () => call(sandbox.url, 'GET', '/users', access),
      (answer) => answer.status === 401,
      5_000,
    );
    expect(expired.body).toMatchObject({ error: { type: 'authentication_error', code: 'expired_token' } });
    const refreshed = await refresh(client, tokens.body.refresh_token as string);
    expect(refreshed.status).toBe(200);
    expect((await call(sandbox.url, 'GET', '/users', refreshed.body.access_token as string)).status).toBe(
      200,
    );
  });
});

// openssl makes the self-signed certificate; .ci/run installs it where a machine lacks it.
describe('a self-signed HTTPS receiver', () => {
  let directory: string;
  let receiver: Server;
  let receiverUrl: string;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'sandbox-tls-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
        '-keyout',
        join(directory, 'key.pem'),
        '-out',
        join(directory, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    receiver = createServer(
      { key: await readFile(join(directory, 'key.pem')), cert: await readFile(join(directory, 'cert.pem')) },
      (request, response) => {
        request.resume();
        request.on('end', () => response.writeHead(200).end('ok'));
      },
    );
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `https://localhost:${(receiver.address() as AddressInfo).port}/webhooks`;
  });

  afterAll(async () => {
    receiver?.closeAllConnections();
    await new Promise((resolve) => receiver?.close(resolve));
    await rm(directory, { recursive: true, force: true });
  });

  async function firstAttempt(env: Record<string, string>): Promise<Delivery['attempts'][number]> {
    const sandbox = await startSandboxProcess(['--rate-limit', '10000'], env);
    try {
      await api(sandbox.url, 'POST', '/webhooks', { url: receiverUrl, events: ['user.created'] });
      await api(sandbox.url, 'POST', '/users', { name: 'Ada', email: 'ada@example.com' });
      const [delivery] = await waitFor(
        async () =>
          ((await api(sandbox.url, 'GET', '/sandbox/deliveries')).body as { data: Delivery[] }).data,
        (list) => (list[0]?.attempts.length ?? 0) > 0,
      );
      return delivery!.attempts[0]!;
    } finally {
      await sandbox.stop();
    }
  }

  it('is refused as self-signed by default, and delivered to once trusted with NODE_EXTRA_CA_CERTS', async () => {
    expect(await firstAttempt({})).toMatchObject({
      status: null,
      error: expect.stringMatching(/self-signed/),
    });
    expect(await firstAttempt({ NODE_EXTRA_CA_CERTS: join(directory, 'cert.pem') })).toMatchObject({
      status: 200,
    });
  });
});
