/**
 * HS256 JWTs: the signer and verifier on a fixed clock, and the sandbox accepting a JWT minted with its
 * signing key as a Bearer credential, as the spec's stateless authentication.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, signJwt, startSandbox, verifyJwt } from '../../src/sandbox/index.js';
import { call } from './oauth-client.js';

const KEY = 'k'.repeat(32);
const NOW = 1_700_000_000;
const CLAIMS = { sub: 'usr_42', iat: NOW, exp: NOW + 60, scope: 'read write' };

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A token with any header, signed (HMAC-SHA256) with `key`, or with `signature` as given. */
function forge(header: unknown, claims: unknown, key = KEY, signature?: string): string {
  const input = `${b64(header)}.${b64(claims)}`;
  return `${input}.${signature ?? createHmac('sha256', key).update(input).digest('base64url')}`;
}

describe('verifyJwt', () => {
  it('accepts what signJwt signs, until exp', () => {
    const token = signJwt(CLAIMS, KEY);
    expect(verifyJwt(token, KEY, NOW)).toEqual({ ok: true, claims: CLAIMS });
    expect(verifyJwt(token, KEY, NOW + 59.9)).toMatchObject({ ok: true });
    expect(verifyJwt(token, KEY, NOW + 60)).toMatchObject({ ok: false, problem: 'expired' });
  });

  it.each([
    ['alg none, unsigned', forge({ alg: 'none', typ: 'JWT' }, CLAIMS, KEY, ''), 'malformed'],
    ['alg none, signed', forge({ alg: 'none', typ: 'JWT' }, CLAIMS), 'algorithm'],
    ['alg HS512', forge({ alg: 'HS512', typ: 'JWT' }, CLAIMS), 'algorithm'],
    ['typ other than JWT', forge({ alg: 'HS256', typ: 'at+jwt+x' }, CLAIMS), 'algorithm'],
    ['another key', forge({ alg: 'HS256', typ: 'JWT' }, CLAIMS, 'x'.repeat(32)), 'signature'],
    [
      'a changed payload',
      `${signJwt(CLAIMS, KEY).split('.')[0]}.${b64({ ...CLAIMS, scope: 'write' })}.${signJwt(CLAIMS, KEY).split('.')[2]}`,
      'signature',
    ],
    ['no sub', forge({ alg: 'HS256', typ: 'JWT' }, { ...CLAIMS, sub: undefined }), 'claims'],
    ['exp as a string', forge({ alg: 'HS256', typ: 'JWT' }, { ...CLAIMS, exp: String(NOW + 60) }), 'claims'],
    ['no scope', forge({ alg: 'HS256', typ: 'JWT' }, { ...CLAIMS, scope: undefined }), 'claims'],
    [
      'iat in the future',
      forge({ alg: 'HS256', typ: 'JWT' }, { ...CLAIMS, iat: NOW + 3600, exp: NOW + 7200 }),
      'claims',
    ],
    ['two segments', 'abc.def', 'malformed'],
  ])('refuses %s', (_case, token, problem) => {
    expect(verifyJwt(token, KEY, NOW)).toMatchObject({ ok: false, problem });
  });

  it('judges the signature before expiry, so a forged token is never told it merely expired', () => {
    const forged = forge({ alg: 'HS256', typ: 'JWT' }, { ...CLAIMS, exp: NOW - 1 }, 'x'.repeat(32));
    expect(verifyJwt(forged, KEY, NOW)).toMatchObject({ ok: false, problem: 'signature' });
  });
});

describe('JWTs at the sandbox', () => {
  let sandbox: Sandbox;

  beforeAll(async () => {
    sandbox = await startSandbox({ port: 0, jwtSecret: KEY, rateLimit: 10_000 });
  });

  afterAll(async () => {
    await sandbox?.close();
  });

  const now = () => Math.floor(Date.now() / 1000);
  const mint = (claims: Partial<typeof CLAIMS>) =>
    signJwt({ sub: 'usr_minted', iat: now(), exp: now() + 60, scope: 'read write', ...claims }, KEY);

  it('accepts a JWT minted with the signing key as a Bearer credential; its sub is its account', async () => {
    expect(sandbox.jwtSecret).toBe(KEY);
    const token = mint({});
    const created = await call(sandbox.url, 'POST', '/projects', token, { name: 'Minted' });
    expect(created.status).toBe(201);
    // Another token for the same sub sees the same data; a key does not.
    expect((await call(sandbox.url, 'GET', '/projects', mint({ scope: 'read' }))).body.data).toEqual([
      created.body,
    ]);
    expect((await call(sandbox.url, 'GET', '/projects', 'sk_test_jwt')).body.data).toEqual([]);
  });

  it('answers an expired JWT 401 expired_token, and a forged or alg-none one 401 invalid_api_key', async () => {
    const expired = await call(sandbox.url, 'GET', '/users', mint({ iat: now() - 120, exp: now() - 60 }));
    expect(expired.status).toBe(401);
    expect(expired.body).toMatchObject({ error: { type: 'authentication_error', code: 'expired_token' } });
    const tokens = [
      forge({ alg: 'none', typ: 'JWT' }, { ...CLAIMS, iat: now(), exp: now() + 60 }, KEY, ''),
      forge({ alg: 'HS256', typ: 'JWT' }, { ...CLAIMS, iat: now(), exp: now() + 60 }, 'x'.repeat(32)),
      mint({ scope: 'read admin' }),
    ];
    for (const token of tokens) {
      const refused = await call(sandbox.url, 'GET', '/users', token);
      expect(refused.status).toBe(401);
      expect(refused.body).toMatchObject({
        error: { type: 'authentication_error', code: 'invalid_api_key' },
      });
      expect(refused.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    }
  });

  it('refuses a start with a signing key shorter than 32 characters', async () => {
    await expect(startSandbox({ port: 0, jwtSecret: 'short' })).rejects.toThrow(/at least 32 characters/);
  });
});
