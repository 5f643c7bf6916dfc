/**
 * Separate accounts: each API key, and each OAuth user, sees only its own users, projects, payments,
 * webhooks and deliveries, and its events go only to its own registrations, so parallel test runs with
 * different keys never meet. Then the data file: accounts kept apart across restarts (version 2),
 * version 1 files still read, and files that cannot be used refused at start in one line.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataFileError, type Delivery, type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { signIn } from './oauth-client.js';
import { api, waitFor } from './support.js';

const REDIRECT_URI = 'http://127.0.0.1:9/callback';
const CLIENT = { client_id: 'app', client_secret: 'app-secret', redirect_uris: [REDIRECT_URI] };

let sandbox: Sandbox;
let receiver: Server;
let receiverUrl: string;
const received: { path: string; type: string }[] = [];
let directory: string;

beforeAll(async () => {
  receiver = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on('end', () => {
      received.push({ path: request.url ?? '', type: JSON.parse(body).type });
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  sandbox = await startSandbox({
    port: 0,
    allowHttp: true,
    rateLimit: 10_000,
    oauthClients: [CLIENT],
  });
  directory = await mkdtemp(join(tmpdir(), 'sandbox-isolation-'));
});

afterAll(async () => {
  await sandbox?.close();
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
  await rm(directory, { recursive: true, force: true });
});

async function list(path: string, key: string): Promise<{ id: string }[]> {
  return ((await api(sandbox.url, 'GET', path, undefined, key)).body as { data: { id: string }[] }).data;
}

describe('accounts', () => {
  it('gives each API key its own users, projects, payments, webhooks and deliveries', async () => {
    const [a, b] = ['sk_test_iso_a', 'sk_test_iso_b'];
    const user = (await api(sandbox.url, 'POST', '/users', { name: 'A', email: 'a@example.com' }, a))
      .body as {
      id: string;
    };
    await api(sandbox.url, 'POST', '/projects', { name: 'A' }, a);
    await api(sandbox.url, 'POST', '/sandbox/payments', { outcome: 'succeeded' }, a);
    const hook = (
      await api(sandbox.url, 'POST', '/webhooks', { url: `${receiverUrl}/a`, events: ['user.updated'] }, a)
    ).body as { id: string };

    for (const path of ['/users', '/projects', '/sandbox/payments', '/webhooks']) {
      expect(await list(path, a)).toHaveLength(1);
      expect(await list(path, b)).toEqual([]);
    }
    // Another account's ids are unknown, exactly as ids that never existed.
    const foreign = await api(sandbox.url, 'GET', `/users/${user.id}`, undefined, b);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toMatchObject({ error: { code: 'user_not_found' } });
    expect((await api(sandbox.url, 'DELETE', `/webhooks/${hook.id}`, undefined, b)).status).toBe(404);
    expect((await api(sandbox.url, 'POST', `/webhooks/${hook.id}/test`, undefined, b)).status).toBe(404);
  });

  it("delivers an account's events only to its own registrations, and lists only its own deliveries", async () => {
    const keys = ['sk_test_iso_c', 'sk_test_iso_d'];
    const hooks: string[] = [];
    for (const key of keys) {
      const created = await api(
        sandbox.url,
        'POST',
        '/webhooks',
        { url: `${receiverUrl}/${key}`, events: ['project.created'] },
        key,
      );
      hooks.push((created.body as { id: string }).id);
    }
    await api(sandbox.url, 'POST', '/projects', { name: 'Only C' }, keys[0]);
    const deliveries = (key: string) =>
      api(sandbox.url, 'GET', '/sandbox/deliveries', undefined, key).then(
        (answer) => (answer.body as { data: Delivery[] }).data,
      );
    const [delivered] = await waitFor(
      () => deliveries(keys[0]!),
      (value) => value[0]?.status === 'succeeded',
    );
    expect(delivered?.webhook_id).toBe(hooks[0]);
    expect(delivered?.event.pending_webhooks).toBe(1);
    expect(await deliveries(keys[1]!)).toEqual([]);
    expect(received.filter((entry) => entry.path.includes('iso_'))).toEqual([
      { path: `/${keys[0]}`, type: 'project.created' },
    ]);
  });

  it("gives each OAuth user an account of their own, apart from API keys'", async () => {
    const config = {
      authUrl: sandbox.authUrl,
      clientId: 'app',
      clientSecret: 'app-secret',
      redirectUri: REDIRECT_URI,
    };
    const alice = await signIn(config, { scope: 'read write', loginHint: 'alice' });
    const bob = await signIn(config, { scope: 'read write', loginHint: 'bob' });
    const aliceAgain = await signIn(config, { scope: 'read', loginHint: 'alice' });
    await api(
      sandbox.url,
      'POST',
      '/users',
      { name: 'Alice', email: 'alice@example.com' },
      alice.access_token,
    );
    expect(await list('/users', alice.access_token)).toHaveLength(1);
    expect(await list('/users', aliceAgain.access_token)).toHaveLength(1);
    expect(await list('/users', bob.access_token)).toEqual([]);
    expect(await list('/users', 'sk_test_alice')).toEqual([]);
  });
});

describe('the data file', () => {
  it('keeps accounts apart across restarts, in version 2', async () => {
    const dataFile = join(directory, 'accounts.json');
    const first = await startSandbox({ port: 0, dataFile });
    await api(first.url, 'POST', '/users', { name: 'E', email: 'e@example.com' }, 'sk_test_e');
    await api(first.url, 'GET', '/users', undefined, 'sk_test_reader');
    await first.close();
    const saved = JSON.parse(await readFile(dataFile, 'utf8'));
    expect(saved.version).toBe(2);
    // An account that only read holds nothing and is not saved.
    expect(Object.keys(saved.accounts)).toEqual(['key:sk_test_e']);

    const second = await startSandbox({ port: 0, dataFile });
    try {
      expect(
        ((await api(second.url, 'GET', '/users', undefined, 'sk_test_e')).body as { total: number }).total,
      ).toBe(1);
      expect(
        ((await api(second.url, 'GET', '/users', undefined, 'sk_test_f')).body as { total: number }).total,
      ).toBe(0);
    } finally {
      await second.close();
    }
  });

  it("reads a version 1 file into the account of --api-key (else sk_test_cli's) and says so", async () => {
    const dataFile = join(directory, 'v1.json');
    const user = {
      id: 'usr_old',
      name: 'Old',
      email: 'old@example.com',
      created_at: new Date().toISOString(),
    };
    await writeFile(dataFile, JSON.stringify({ version: 1, users: [user] }));
    const lines: string[] = [];
    const old = await startSandbox({
      port: 0,
      dataFile,
      apiKey: 'sk_test_mine',
      log: (line) => lines.push(line),
    });
    try {
      expect(lines[0]).toMatch(/version 1 data file: its data now belongs to the key sk_test_mine/);
      expect((await api(old.url, 'GET', '/users/usr_old', undefined, 'sk_test_mine')).body).toEqual(user);
    } finally {
      await old.close();
    }
    expect(JSON.parse(await readFile(dataFile, 'utf8'))).toMatchObject({
      version: 2,
      accounts: { 'key:sk_test_mine': { users: [user] } },
    });
  });

  it.each([
    ['not JSON', '{"version":', /is not valid JSON/],
    ['another version', '{"version":3}', /is not a sandbox data file/],
    ['an array', '[]', /is not a sandbox data file/],
    ['accounts as a list', '{"version":2,"accounts":[]}', /accounts must be an object/],
    ['users not a list', '{"version":1,"users":{}}', /users must be an array/],
    [
      'a webhook without url',
      '{"version":1,"webhooks":[{"id":"wh_1","events":[],"secret":"s"}]}',
      /webhooks\[0\] needs url/,
    ],
    ['a bad client', '{"version":2,"oauth_clients":[{"client_id":"a b"}]}', /oauth_clients\[0\]: client_id/],
  ])('refuses a file that is %s at start, in one line', async (_case, text, message) => {
    const dataFile = join(directory, 'wrong.json');
    await writeFile(dataFile, text);
    const start = startSandbox({ port: 0, dataFile });
    await expect(start).rejects.toBeInstanceOf(DataFileError);
    await expect(start).rejects.toThrow(message);
    await start.catch((error: Error) => {
      expect(error.message).not.toContain('\n');
      expect(error.message).toMatch(/move it away or pass another --data file\.$/);
    });
  });

  it('refuses a file in a folder that does not exist at start, not at the first save', async () => {
    const dataFile = join(directory, 'missing', 'sandbox.json');
    await expect(startSandbox({ port: 0, dataFile })).rejects.toThrow(
      /the folder \S+missing does not exist; create it or pass another --data file\./,
    );
  });
});
