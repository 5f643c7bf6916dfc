/**
 * The sandbox's API contract, in-process: authentication, the two error shapes, pagination, rate-limit
 * headers and 429, webhook registration rules and persistence.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_PAGE_LIMIT, type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { api } from './support.js';

let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, rateLimit: 10_000 });
});

afterAll(async () => {
  await sandbox?.close();
});

async function raw(path: string, authorization?: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${sandbox.url}${path}`, {
    headers: authorization === undefined ? {} : { authorization },
  });
  return { status: response.status, body: await response.json() };
}

describe('authentication', () => {
  it.each([
    ['missing', undefined],
    ['malformed', 'sk_test_abc'],
    ['not Bearer', 'Basic c2tfdGVzdF9hYmM='],
    ['a live key', 'Bearer sk_live_abc'],
    ['not a test key', 'Bearer pk_test_abc'],
  ])('refuses a %s key with 401 invalid_api_key in shape A', async (_case, authorization) => {
    const { status, body } = await raw('/users', authorization);
    expect(status).toBe(401);
    expect(body).toEqual({
      error: { type: 'authentication_error', code: 'invalid_api_key', message: expect.any(String) },
    });
  });

  it('accepts Bearer sk_test_…', async () => {
    expect((await raw('/users', 'Bearer sk_test_abc')).status).toBe(200);
  });

  it('accepts only the configured key when one is given', async () => {
    const strict = await startSandbox({ port: 0, apiKey: 'sk_test_only' });
    try {
      expect((await api(strict.url, 'GET', '/users', undefined, 'sk_test_only')).status).toBe(200);
      expect((await api(strict.url, 'GET', '/users', undefined, 'sk_test_other')).status).toBe(401);
    } finally {
      await strict.close();
    }
  });
});

describe('users and shape B', () => {
  it.each([
    [{ email: 'a@example.com' }, 'name', 'is required'],
    [{ name: 'A' }, 'email', 'is required'],
    [{ name: 42, email: 'a@example.com' }, 'name', 'must be a string'],
    [{ name: 'A', email: 'not-an-email' }, 'email', 'must be a valid e-mail address'],
    [['not', 'an', 'object'], 'body', 'must be a JSON object'],
  ])('refuses %j with INVALID_REQUEST naming the field', async (body, field, reason) => {
    const response = await api(sandbox.url, 'POST', '/users', body);
    expect(response.status).toBe(400);
    expect(response.body).toEqual({
      error: { code: 'INVALID_REQUEST', message: expect.any(String), details: { field, reason } },
    });
  });

  it('refuses a body that is not JSON', async () => {
    const response = await fetch(`${sandbox.url}/users`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk_test_abc' },
      body: '{"name":',
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: { code: 'INVALID_REQUEST', details: { field: 'body' } },
    });
  });

  it('creates, reads, updates and deletes a user; a deleted user is 404 user_not_found', async () => {
    const created = await api(sandbox.url, 'POST', '/users', { name: 'Ada', email: 'ada@example.com' });
    expect(created.status).toBe(201);
    const user = created.body as { id: string; created_at: string };
    expect(user).toEqual({
      id: expect.stringMatching(/^usr_/),
      name: 'Ada',
      email: 'ada@example.com',
      created_at: expect.any(String),
    });
    expect((await api(sandbox.url, 'GET', `/users/${user.id}`)).body).toEqual(user);
    const updated = await api(sandbox.url, 'PUT', `/users/${user.id}`, { name: 'Ada L.' });
    expect(updated.body).toEqual({ ...user, name: 'Ada L.' });
    expect((await api(sandbox.url, 'DELETE', `/users/${user.id}`)).body).toEqual({
      id: user.id,
      deleted: true,
    });
    const gone = await api(sandbox.url, 'GET', `/users/${user.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ error: { code: 'user_not_found', message: expect.any(String) } });
  });

  it('answers an unknown path 404 and a wrong method 405, in shape B', async () => {
    expect((await api(sandbox.url, 'GET', '/nothing')).status).toBe(404);
    const wrong = await api(sandbox.url, 'PATCH', '/users');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST, GET');
  });
});

describe('pagination', () => {
  it('pages projects with limit and offset (defaults 20 and 0, maximum 100)', async () => {
    const local = await startSandbox({ port: 0, rateLimit: 10_000 });
    try {
      for (let i = 0; i < 25; i++) await api(local.url, 'POST', '/projects', { name: `p${i}` });
      const first = (await api(local.url, 'GET', '/projects')).body as { data: { name: string }[] };
      expect(first).toMatchObject({ object: 'list', limit: 20, offset: 0, total: 25, has_more: true });
      expect(first.data.map((project) => project.name)).toEqual(
        Array.from({ length: 20 }, (_, i) => `p${i}`),
      );
      const last = (await api(local.url, 'GET', '/projects?limit=10&offset=20')).body as {
        data: { name: string }[];
      };
      expect(last).toMatchObject({ limit: 10, offset: 20, total: 25, has_more: false });
      expect(last.data.map((project) => project.name)).toEqual(['p20', 'p21', 'p22', 'p23', 'p24']);
      expect(
        ((await api(local.url, 'GET', `/projects?limit=${MAX_PAGE_LIMIT}`)).body as { data: unknown[] }).data,
      ).toHaveLength(25);
    } finally {
      await local.close();
    }
  });

  it.each([
    ['limit=0', 'limit'],
    [`limit=${MAX_PAGE_LIMIT + 1}`, 'limit'],
    ['limit=ten', 'limit'],
    ['offset=-1', 'offset'],
  ])('refuses %s with INVALID_REQUEST on %s', async (query, field) => {
    const response = await api(sandbox.url, 'GET', `/users?${query}`);
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ error: { code: 'INVALID_REQUEST', details: { field } } });
  });
});

describe('rate limiting', () => {
  it('counts per key, carries the headers on every response and answers 429 with Retry-After', async () => {
    const limited = await startSandbox({ port: 0, rateLimit: 3 });
    try {
      const before = Math.floor(Date.now() / 1000);
      const answers = [];
      for (let i = 0; i < 4; i++)
        answers.push(await api(limited.url, 'GET', '/users', undefined, 'sk_test_a'));
      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 429]);
      expect(answers.map((answer) => answer.headers.get('x-ratelimit-remaining'))).toEqual([
        '2',
        '1',
        '0',
        '0',
      ]);
      for (const answer of answers) expect(answer.headers.get('x-ratelimit-limit')).toBe('3');
      // X-RateLimit-Reset is a Unix time in seconds, about one hour ahead.
      const reset = Number(answers[0]?.headers.get('x-ratelimit-reset'));
      expect(reset).toBeGreaterThanOrEqual(before + 3599);
      expect(reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 3600);
      const refused = answers[3]!;
      expect(refused.body).toEqual({ error: { code: 'rate_limit_exceeded', message: expect.any(String) } });
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(3500);
      expect(retryAfter).toBeLessThanOrEqual(3600);
      // Another key has its own budget; a 401 carries the headers too.
      expect(
        (await api(limited.url, 'GET', '/users', undefined, 'sk_test_b')).headers.get(
          'x-ratelimit-remaining',
        ),
      ).toBe('2');
      const unauthenticated = await api(limited.url, 'GET', '/users', undefined, 'sk_live_x');
      expect(unauthenticated.status).toBe(401);
      expect(unauthenticated.headers.get('x-ratelimit-limit')).toBe('3');
      // The deliveries listing is tooling: free, so tests may poll it.
      const listing = await api(limited.url, 'GET', '/sandbox/deliveries', undefined, 'sk_test_c');
      expect(listing.headers.get('x-ratelimit-remaining')).toBe('3');
    } finally {
      await limited.close();
    }
  });
});

describe('webhook registrations', () => {
  it('refuses http:// addresses unless started with allowHttp', async () => {
    const response = await api(sandbox.url, 'POST', '/webhooks', {
      url: 'http://127.0.0.1:1/hook',
      events: ['user.created'],
    });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ error: { code: 'INVALID_REQUEST', details: { field: 'url' } } });
  });

  it('validates events, answers the secret once, accepts a PUT holding only events, deletes', async () => {
    const unknown = await api(sandbox.url, 'POST', '/webhooks', {
      url: 'https://example.com/hook',
      events: ['user.exploded'],
    });
    expect(unknown.body).toMatchObject({ error: { code: 'INVALID_REQUEST', details: { field: 'events' } } });

    const created = await api(sandbox.url, 'POST', '/webhooks', {
      url: 'https://example.com/hook',
      events: ['user.created'],
    });
    expect(created.status).toBe(201);
    const registration = created.body as { id: string; secret: string };
    expect(registration.secret).toMatch(/^whsec_/);

    const updated = await api(sandbox.url, 'PUT', `/webhooks/${registration.id}`, {
      events: ['payment.failed', 'payment.refunded'],
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toEqual({
      id: registration.id,
      url: 'https://example.com/hook',
      events: ['payment.failed', 'payment.refunded'],
      created_at: expect.any(String),
    });

    const listed = (await api(sandbox.url, 'GET', '/webhooks')).body as { data: Record<string, unknown>[] };
    const mine = listed.data.find((entry) => entry.id === registration.id);
    expect(mine).toBeDefined();
    expect(mine).not.toHaveProperty('secret');

    expect((await api(sandbox.url, 'DELETE', `/webhooks/${registration.id}`)).body).toEqual({
      id: registration.id,
      deleted: true,
    });
    expect(
      (await api(sandbox.url, 'PUT', `/webhooks/${registration.id}`, { events: ['user.created'] })).status,
    ).toBe(404);
  });
});

describe('persistence', () => {
  it('keeps data across restarts in the --data file', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'sandbox-data-'));
    const dataFile = join(directory, 'sandbox.json');
    try {
      const first = await startSandbox({ port: 0, dataFile });
      const created = await api(first.url, 'POST', '/users', { name: 'Grace', email: 'grace@example.com' });
      await first.close();
      // Version 2: data is kept per account (here the key sk_test_cli's).
      expect(JSON.parse(await readFile(dataFile, 'utf8'))).toMatchObject({
        version: 2,
        accounts: { 'key:sk_test_cli': { users: [created.body] } },
      });

      const second = await startSandbox({ port: 0, dataFile });
      try {
        const { id } = created.body as { id: string };
        expect((await api(second.url, 'GET', `/users/${id}`)).body).toEqual(created.body);
      } finally {
        await second.close();
      }
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});
