/**
 * The sandbox's authorization server, in-process, driven by a `fetch` client as an integration would
 * drive it: the authorization-code flow with its consent step, the code exchange and refresh, token
 * expiry, scopes, and the rules RFC 6749 sets (single-use short-lived codes, exact redirect URIs,
 * client authentication).
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import {
  authorizeUrl,
  type ClientConfig,
  call,
  claimsOf,
  consent,
  exchangeCode,
  refresh,
  signIn,
  tokenRequest,
} from './oauth-client.js';

const REDIRECT_URI = 'http://127.0.0.1:9/callback';
const CLIENT = { client_id: 'app', client_secret: 'app-secret', redirect_uris: [REDIRECT_URI] };

let sandbox: Sandbox;
let app: ClientConfig;

function configFor(target: Sandbox): ClientConfig {
  return { authUrl: target.authUrl, clientId: 'app', clientSecret: 'app-secret', redirectUri: REDIRECT_URI };
}

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, rateLimit: 10_000, oauthClients: [CLIENT] });
  app = configFor(sandbox);
});

afterAll(async () => {
  await sandbox?.close();
});

const shapeA = (code: string) => ({
  error: { type: 'authentication_error', code, message: expect.any(String) },
});

describe('authorization-code flow', () => {
  it('walks the flow with fetch: consent page, approval, code exchange, API calls with the token', async () => {
    const url = authorizeUrl(app, { scope: 'read write', state: 'state-123' });
    expect(url).toBe(
      `${sandbox.authUrl}/oauth/authorize?client_id=app&redirect_uri=${encodeURIComponent(REDIRECT_URI)}&response_type=code&scope=read+write&state=state-123`,
    );
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);

    const redirected = await consent(url);
    expect(`${redirected.origin}${redirected.pathname}`).toBe(REDIRECT_URI);
    expect(redirected.searchParams.get('state')).toBe('state-123');
    const code = redirected.searchParams.get('code');
    expect(code).toEqual(expect.any(String));

    const answer = await exchangeCode(app, code!);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(answer.body).toEqual({
      access_token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
      token_type: 'Bearer',
      expires_in: 3600,
      refresh_token: expect.stringMatching(/^rt_/),
      scope: 'read write',
    });
    const accessToken = answer.body.access_token as string;
    const claims = claimsOf(accessToken);
    expect(claims).toMatchObject({ sub: 'user@app', scope: 'read write', client_id: 'app' });
    expect(claims.exp).toBe((claims.iat as number) + 3600);
    const header = JSON.parse(Buffer.from(accessToken.split('.')[0]!, 'base64url').toString());
    expect(header).toEqual({ alg: 'HS256', typ: 'JWT' });

    const created = await call(sandbox.url, 'POST', '/users', accessToken, {
      name: 'Ada',
      email: 'ada@example.com',
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('x-ratelimit-limit')).toBe('10000');
    const listed = await call(sandbox.url, 'GET', '/users', accessToken);
    expect(listed.body.data).toEqual([created.body]);
  });

  it('refreshes after the access token expires (401 expired_token, shape A); each refresh token is good once', async () => {
    const short = await startSandbox({ port: 0, oauthClients: [CLIENT], accessTokenTtlSeconds: 2 });
    try {
      const client = configFor(short);
      const tokens = await signIn(client, { scope: 'read' });
      expect(tokens.expires_in).toBe(2);
      expect((await call(short.url, 'GET', '/users', tokens.access_token)).status).toBe(200);

      // Wait out the lifetime, as a client's refresh-on-expiry path would meet it.
      const expired = await waitForStatus(() => call(short.url, 'GET', '/users', tokens.access_token), 401);
      expect(expired.body).toEqual(shapeA('expired_token'));
      expect(expired.headers.get('www-authenticate')).toContain('error="invalid_token"');

      const refreshed = await refresh(client, tokens.refresh_token);
      expect(refreshed.status).toBe(200);
      expect(refreshed.body).toMatchObject({ token_type: 'Bearer', expires_in: 2, scope: 'read' });
      expect(refreshed.body.refresh_token).not.toBe(tokens.refresh_token);
      expect(claimsOf(refreshed.body.access_token as string).sub).toBe('user@app');
      expect((await call(short.url, 'GET', '/users', refreshed.body.access_token as string)).status).toBe(
        200,
      );

      const again = await refresh(client, tokens.refresh_token);
      expect(again.status).toBe(400);
      expect(again.body).toEqual(shapeA('invalid_grant'));
    } finally {
      await short.close();
    }
  });

  it('refuses a write with a read-only token (403 insufficient_scope, shape A); reads pass', async () => {
    const { access_token } = await signIn(app, { scope: 'read', loginHint: 'reader' });
    expect((await call(sandbox.url, 'GET', '/projects', access_token)).status).toBe(200);
    for (const [method, path] of [
      ['POST', '/projects'],
      ['PUT', '/users/usr_x'],
      ['DELETE', '/webhooks/wh_x'],
      ['POST', '/sandbox/payments'],
    ] as const) {
      const refused = await call(sandbox.url, method, path, access_token, { name: 'X' });
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual(shapeA('insufficient_scope'));
      expect(refused.headers.get('www-authenticate')).toBe(
        'Bearer error="insufficient_scope", scope="write"',
      );
    }
    // Scopes are separate permissions: a write-only token may not list.
    const writer = await signIn(app, { scope: 'write', loginHint: 'writer' });
    expect((await call(sandbox.url, 'POST', '/projects', writer.access_token, { name: 'P' })).status).toBe(
      201,
    );
    expect((await call(sandbox.url, 'GET', '/projects', writer.access_token)).body).toEqual(
      shapeA('insufficient_scope'),
    );
  });

  it('defaults scope to read, and narrows (never widens) it on refresh', async () => {
    expect((await signIn(app)).scope).toBe('read');
    const tokens = await signIn(app, { scope: 'write read' });
    expect(tokens.scope).toBe('read write');
    const wider = await refresh(app, tokens.refresh_token, { scope: 'read write admin' });
    expect(wider.body).toEqual(shapeA('invalid_scope'));
    const narrowed = await refresh(app, tokens.refresh_token, { scope: 'read' });
    expect(narrowed.body.scope).toBe('read');
    expect(claimsOf(narrowed.body.access_token as string).scope).toBe('read');
  });
});

describe('authorization codes', () => {
  it('are single-use: a second exchange is invalid_grant and revokes the first refresh token', async () => {
    const redirected = await consent(authorizeUrl(app, { scope: 'read' }));
    const code = redirected.searchParams.get('code')!;
    const first = await exchangeCode(app, code);
    expect(first.status).toBe(200);
    const second = await exchangeCode(app, code);
    expect(second.status).toBe(400);
    expect(second.body).toEqual(shapeA('invalid_grant'));
    expect((await refresh(app, first.body.refresh_token as string)).body).toEqual(shapeA('invalid_grant'));
  });

  it('are short-lived', async () => {
    const quick = await startSandbox({ port: 0, oauthClients: [CLIENT], authorizationCodeTtlSeconds: 0.2 });
    try {
      const client = configFor(quick);
      const redirected = await consent(authorizeUrl(client));
      await new Promise((resolve) => setTimeout(resolve, 300));
      const late = await exchangeCode(client, redirected.searchParams.get('code')!);
      expect(late.status).toBe(400);
      expect(late.body).toMatchObject({
        error: { code: 'invalid_grant', message: expect.stringMatching(/expired/) },
      });
    } finally {
      await quick.close();
    }
  });

  it('are bound to the redirect_uri and the client they were issued for', async () => {
    const other = await startSandbox({
      port: 0,
      oauthClients: [
        CLIENT,
        { client_id: 'other', client_secret: 'other-secret', redirect_uris: [REDIRECT_URI] },
      ],
    });
    try {
      const client = configFor(other);
      const code = async () => (await consent(authorizeUrl(client))).searchParams.get('code')!;
      const mismatch = await exchangeCode(client, await code(), 'http://127.0.0.1:9/elsewhere');
      expect(mismatch.body).toMatchObject({
        error: { code: 'invalid_grant', message: expect.stringMatching(/redirect_uri/) },
      });
      const stolen = await exchangeCode(
        { ...client, clientId: 'other', clientSecret: 'other-secret' },
        await code(),
      );
      expect(stolen.body).toMatchObject({
        error: { code: 'invalid_grant', message: expect.stringMatching(/another client/) },
      });
    } finally {
      await other.close();
    }
  });
});

describe('a failed code exchange', () => {
  it('does not use the code up: after a wrong secret, another client and a wrong redirect_uri, the rightful client still exchanges it, once', async () => {
    const two = await startSandbox({
      port: 0,
      oauthClients: [
        CLIENT,
        { client_id: 'other', client_secret: 'other-secret', redirect_uris: [REDIRECT_URI] },
      ],
    });
    try {
      const client = configFor(two);
      const code = (await consent(authorizeUrl(client, { scope: 'read' }))).searchParams.get('code')!;

      // Wrong client authentication is the client's fault (§5.2 invalid_client), not the code's.
      const wrongSecret = await exchangeCode({ ...client, clientSecret: 'nope' }, code);
      expect([wrongSecret.status, wrongSecret.body]).toEqual([401, shapeA('invalid_client')]);
      // A code issued to another client, or a different redirect_uri, is invalid_grant (§4.1.3).
      const otherClient = await exchangeCode(
        { ...client, clientId: 'other', clientSecret: 'other-secret' },
        code,
      );
      expect([otherClient.status, otherClient.body]).toEqual([400, shapeA('invalid_grant')]);
      const otherUri = await exchangeCode(client, code, 'http://127.0.0.1:9/elsewhere');
      expect([otherUri.status, otherUri.body]).toEqual([400, shapeA('invalid_grant')]);

      const rightful = await exchangeCode(client, code);
      expect(rightful.status).toBe(200);
      expect((await call(two.url, 'GET', '/users', rightful.body.access_token as string)).status).toBe(200);

      const again = await exchangeCode(client, code);
      expect([again.status, again.body]).toEqual([400, shapeA('invalid_grant')]);
    } finally {
      await two.close();
    }
  });
});

describe('replay revokes the whole grant', () => {
  const revoked = {
    error: {
      type: 'authentication_error',
      code: 'invalid_api_key',
      message: expect.stringMatching(/revoked/),
    },
  };

  it('a replayed code revokes every token it led to: access tokens and the refresh tokens rotated since', async () => {
    const bystander = await signIn(app, { scope: 'read', loginHint: 'bystander' });
    const code = (await consent(authorizeUrl(app, { scope: 'read' }))).searchParams.get('code')!;
    const first = (await exchangeCode(app, code)).body;
    const rotated = (await refresh(app, first.refresh_token as string)).body;
    expect((await call(sandbox.url, 'GET', '/users', rotated.access_token as string)).status).toBe(200);

    const replayed = await exchangeCode(app, code);
    expect([replayed.status, replayed.body]).toEqual([400, shapeA('invalid_grant')]);

    for (const token of [first.access_token, rotated.access_token] as string[]) {
      const refused = await call(sandbox.url, 'GET', '/users', token);
      expect([refused.status, refused.body]).toEqual([401, revoked]);
      expect(refused.headers.get('www-authenticate')).toContain('error="invalid_token"');
    }
    expect((await refresh(app, rotated.refresh_token as string)).body).toEqual(shapeA('invalid_grant'));
    // Only that grant: the same client's other grants keep working.
    expect((await call(sandbox.url, 'GET', '/users', bystander.access_token)).status).toBe(200);
    expect((await refresh(app, bystander.refresh_token)).status).toBe(200);
  });

  it('a reused refresh token is refused and revokes the tokens rotated from it (RFC 6819 §5.2.2.3)', async () => {
    const bystander = await signIn(app, { scope: 'read', loginHint: 'bystander' });
    const first = await signIn(app, { scope: 'read', loginHint: 'rotating' });
    const second = (await refresh(app, first.refresh_token)).body;
    const third = (await refresh(app, second.refresh_token as string)).body;
    expect(third.refresh_token).not.toBe(second.refresh_token);
    expect((await call(sandbox.url, 'GET', '/users', third.access_token as string)).status).toBe(200);

    // The first refresh token was rotated away: whoever presents it now holds a copy.
    const reused = await refresh(app, first.refresh_token);
    expect([reused.status, reused.body]).toEqual([
      400,
      {
        error: {
          type: 'authentication_error',
          code: 'invalid_grant',
          message: expect.stringMatching(/already used.*revoked/),
        },
      },
    ]);

    const newest = await call(sandbox.url, 'GET', '/users', third.access_token as string);
    expect([newest.status, newest.body]).toEqual([401, revoked]);
    for (const token of [first.access_token, second.access_token] as string[]) {
      expect((await call(sandbox.url, 'GET', '/users', token)).status).toBe(401);
    }
    expect((await refresh(app, third.refresh_token as string)).body).toEqual(shapeA('invalid_grant'));
    expect((await call(sandbox.url, 'GET', '/users', bystander.access_token)).status).toBe(200);
    expect((await refresh(app, bystander.refresh_token)).status).toBe(200);
  });
});

describe('the authorization endpoint', () => {
  it('refuses an unregistered redirect_uri or client with a JSON error, never a redirect', async () => {
    const wrongUri = await fetch(authorizeUrl({ ...app, redirectUri: 'http://evil.example/cb' }), {
      redirect: 'manual',
    });
    expect(wrongUri.status).toBe(400);
    expect(wrongUri.headers.get('location')).toBeNull();
    expect(await wrongUri.json()).toEqual(shapeA('invalid_request'));
    const wrongClient = await fetch(authorizeUrl({ ...app, clientId: 'nobody' }), { redirect: 'manual' });
    expect(wrongClient.status).toBe(400);
    expect(await wrongClient.json()).toEqual(shapeA('invalid_client'));
  });

  it('redirects errors the app must see: access_denied, invalid_scope, unsupported_response_type, with the state', async () => {
    const denied = await consent(authorizeUrl(app, { state: 's1' }), 'deny');
    expect(Object.fromEntries(denied.searchParams)).toMatchObject({ error: 'access_denied', state: 's1' });
    for (const [params, error] of [
      [{ scope: 'admin', state: 's2' }, 'invalid_scope'],
      [{ responseType: 'token', state: 's2' }, 'unsupported_response_type'],
    ] as const) {
      const answer = await fetch(authorizeUrl(app, params), { redirect: 'manual' });
      expect(answer.status).toBe(302);
      const location = new URL(answer.headers.get('location')!);
      expect(`${location.origin}${location.pathname}`).toBe(REDIRECT_URI);
      expect(Object.fromEntries(location.searchParams)).toMatchObject({ error, state: 's2' });
    }
  });

  it('with auto-approve, redirects at once (302) with the code and the state', async () => {
    const auto = await startSandbox({ port: 0, oauthClients: [CLIENT], oauthAutoApprove: true });
    try {
      const client = configFor(auto);
      const answer = await fetch(authorizeUrl(client, { scope: 'read write', state: 'auto' }), {
        redirect: 'manual',
      });
      expect(answer.status).toBe(302);
      const location = new URL(answer.headers.get('location')!);
      expect(location.searchParams.get('state')).toBe('auto');
      const tokens = await exchangeCode(client, location.searchParams.get('code')!);
      expect(tokens.body.scope).toBe('read write');
    } finally {
      await auto.close();
    }
  });
});

describe('the token endpoint', () => {
  it('authenticates the client by body or HTTP Basic, and refuses a wrong secret with 401 invalid_client', async () => {
    const code = async () => (await consent(authorizeUrl(app))).searchParams.get('code')!;
    const wrong = await exchangeCode({ ...app, clientSecret: 'nope' }, await code());
    expect(wrong.status).toBe(401);
    expect(wrong.body).toEqual(shapeA('invalid_client'));
    expect(wrong.headers.get('www-authenticate')).toMatch(/^Basic/);

    const basic = await tokenRequest(
      app.authUrl,
      { grant_type: 'authorization_code', code: await code(), redirect_uri: REDIRECT_URI },
      { authorization: `Basic ${Buffer.from('app:app-secret').toString('base64')}` },
    );
    expect(basic.status).toBe(200);
    const anonymous = await tokenRequest(app.authUrl, {
      grant_type: 'authorization_code',
      code: await code(),
      redirect_uri: REDIRECT_URI,
    });
    expect(anonymous.body).toEqual(shapeA('invalid_client'));
  });

  it.each([
    ['no grant_type', {}, 400, 'invalid_request'],
    ['an unknown grant_type', { grant_type: 'password' }, 400, 'unsupported_grant_type'],
    ['no refresh_token', { grant_type: 'refresh_token' }, 400, 'invalid_request'],
    [
      'an unknown refresh_token',
      { grant_type: 'refresh_token', refresh_token: 'rt_nope' },
      400,
      'invalid_grant',
    ],
    [
      'no code',
      { grant_type: 'authorization_code', client_id: 'app', client_secret: 'app-secret' },
      400,
      'invalid_request',
    ],
  ])('answers %s with %i %s in shape A', async (_case, form, status, code) => {
    const answer = await tokenRequest(app.authUrl, form as Record<string, string>);
    expect(answer.status).toBe(status);
    expect(answer.body).toEqual(shapeA(code));
  });

  it('wants a form-encoded body, each parameter once', async () => {
    const json = await fetch(`${app.authUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'refresh_token', refresh_token: 'rt_x' }),
    });
    expect(json.status).toBe(400);
    expect(await json.json()).toEqual(shapeA('invalid_request'));
    const repeated = await fetch(`${app.authUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=refresh_token&grant_type=authorization_code',
    });
    expect(await repeated.json()).toEqual(shapeA('invalid_request'));
    expect((await fetch(`${app.authUrl}/oauth/token`)).status).toBe(405);
  });
});

describe('clients and tokens across restarts', () => {
  it('reads clients from the data file, and keeps refresh tokens and the signing key', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'sandbox-oauth-'));
    const dataFile = join(directory, 'sandbox.json');
    try {
      await writeFile(dataFile, JSON.stringify({ version: 2, oauth_clients: [CLIENT] }));
      const first = await startSandbox({ port: 0, dataFile });
      const tokens = await signIn(configFor(first), { scope: 'read write', loginHint: 'kept' });
      await first.close();
      const saved = JSON.parse(await readFile(dataFile, 'utf8'));
      expect(saved.refresh_tokens).toEqual([
        expect.objectContaining({ client_id: 'app', sub: 'kept', scope: 'read write' }),
      ]);
      // Only a digest is kept: the file holds no usable refresh token.
      expect(JSON.stringify(saved)).not.toContain(tokens.refresh_token);

      const second = await startSandbox({ port: 0, dataFile });
      try {
        expect((await call(second.url, 'GET', '/users', tokens.access_token)).status).toBe(200);
        expect((await refresh(configFor(second), tokens.refresh_token)).status).toBe(200);
      } finally {
        await second.close();
      }
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it('recognises a reused refresh token after a restart, and keeps the revocation', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'sandbox-oauth-'));
    const dataFile = join(directory, 'sandbox.json');
    try {
      await writeFile(dataFile, JSON.stringify({ version: 2, oauth_clients: [CLIENT] }));
      const first = await startSandbox({ port: 0, dataFile });
      const tokens = await signIn(configFor(first), { scope: 'read', loginHint: 'restarted' });
      const rotated = (await refresh(configFor(first), tokens.refresh_token)).body;
      await first.close();
      expect(await readFile(dataFile, 'utf8')).not.toContain(tokens.refresh_token);

      const second = await startSandbox({ port: 0, dataFile });
      try {
        expect((await refresh(configFor(second), tokens.refresh_token)).body).toMatchObject({
          error: { code: 'invalid_grant', message: expect.stringMatching(/already used.*revoked/) },
        });
      } finally {
        await second.close();
      }
      const third = await startSandbox({ port: 0, dataFile });
      try {
        expect((await call(third.url, 'GET', '/users', rotated.access_token as string)).status).toBe(401);
        expect((await refresh(configFor(third), rotated.refresh_token as string)).status).toBe(400);
      } finally {
        await third.close();
      }
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it('reads refresh tokens saved before grants existed: each is a grant of its own, rotated and replay-checked', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'sandbox-oauth-'));
    const dataFile = join(directory, 'sandbox.json');
    const legacy = 'rt_saved_before_grant_ids';
    try {
      await writeFile(
        dataFile,
        JSON.stringify({
          version: 2,
          oauth_clients: [CLIENT],
          refresh_tokens: [
            {
              token_hash: createHash('sha256').update(legacy).digest('hex'),
              client_id: 'app',
              sub: 'legacy',
              scope: 'read',
              expires_at: Math.floor(Date.now() / 1000) + 3600,
            },
          ],
        }),
      );
      const restarted = await startSandbox({ port: 0, dataFile });
      try {
        const rotated = await refresh(configFor(restarted), legacy);
        expect(rotated.status).toBe(200);
        expect(claimsOf(rotated.body.access_token as string)).toMatchObject({ sub: 'legacy' });
        expect((await refresh(configFor(restarted), legacy)).status).toBe(400);
        expect((await call(restarted.url, 'GET', '/users', rotated.body.access_token as string)).status).toBe(
          401,
        );
      } finally {
        await restarted.close();
      }
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});

async function waitForStatus<T extends { status: number }>(
  read: () => Promise<T>,
  status: number,
): Promise<T> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const value = await read();
    if (value.status === status || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
