/**
 * A platform's integration test against the sandbox: three accounts (each API key is an account of
 * its own in the sandbox) each register a webhook to one receiver route, `/webhooks/<account>`, and
 * keep the secret the sandbox generated; one Express receiver with `tenant` serves all three. Each
 * account's events reach its handler with `ctx.tenant` naming it; a registration whose secret the
 * platform has not stored yet is refused until it is, and then its retry is handled.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createWebhooks } from 'service-webhooks';
import { expressWebhooks } from 'service-webhooks/express';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Delivery, type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { api, waitFor } from './support.js';

const ACCOUNTS = ['acme', 'globex', 'initech'] as const;
/** The platform's own table of its accounts' webhook secrets, filled as it registers them. */
const storedSecrets = new Map<string, string>();
const handled: string[] = [];

let sandbox: Sandbox;
let server: Server;
let receiverUrl: string;

beforeAll(async () => {
  const webhooks = createWebhooks({
    tenant: {
      from: { param: 'account' },
      secret: (account) => storedSecrets.get(account),
      unknownTtlSeconds: 0,
    },
  });
  webhooks.on('user.created', (event, ctx) => {
    handled.push(`${ctx.tenant} ${event.data.email}`);
  });
  const app = express();
  app.post('/webhooks/:account', expressWebhooks(webhooks));
  server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // timeScale: the sender's 1, 5 and 15 minute retries in 0.6, 3 and 9 s: room for the test to store the secret between them on a loaded machine.
  sandbox = await startSandbox({ port: 0, allowHttp: true, timeScale: 0.01, rateLimit: 10_000 });
});

afterAll(async () => {
  await sandbox?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

const keyOf = (account: string) => `sk_test_${account}`;

async function register(account: string): Promise<{ id: string; secret: string }> {
  const created = await api(
    sandbox.url,
    'POST',
    '/webhooks',
    { url: `${receiverUrl}/webhooks/${account}`, events: ['user.created'] },
    keyOf(account),
  );
  expect(created.status).toBe(201);
  return created.body as { id: string; secret: string };
}

async function deliveriesOf(account: string, webhookId: string): Promise<Delivery[]> {
  const answer = await api(
    sandbox.url,
    'GET',
    `/sandbox/deliveries?webhook_id=${webhookId}`,
    undefined,
    keyOf(account),
  );
  return (answer.body as { data: Delivery[] }).data;
}

it('three accounts registered to one route: each account’s event handled under its own tenant', async () => {
  const registrations = new Map<string, string>();
  for (const account of ACCOUNTS) {
    const { id, secret } = await register(account);
    expect(secret).toMatch(/^whsec_/);
    storedSecrets.set(account, secret);
    registrations.set(account, id);
  }
  for (const account of ACCOUNTS) {
    const created = await api(
      sandbox.url,
      'POST',
      '/users',
      { name: account, email: `ops@${account}.example` },
      keyOf(account),
    );
    expect(created.status).toBe(201);
  }
  for (const account of ACCOUNTS) {
    const [delivery] = await waitFor(
      () => deliveriesOf(account, registrations.get(account)!),
      (list) => list.length === 1 && list[0]!.status !== 'pending',
    );
    expect(delivery?.status).toBe('succeeded');
  }
  expect(handled.sort()).toEqual(ACCOUNTS.map((account) => `${account} ops@${account}.example`));
});

it('an account registered before the platform stored its secret is 404 until it does; the sender’s retry is then handled', async () => {
  const { id, secret } = await register('hooli');
  await api(sandbox.url, 'POST', '/users', { name: 'hooli', email: 'ops@hooli.example' }, keyOf('hooli'));
  const first = await waitFor(
    () => deliveriesOf('hooli', id),
    (list) => (list[0]?.attempts.length ?? 0) >= 1,
  );
  expect(first[0]?.attempts[0]?.status).toBe(404);
  storedSecrets.set('hooli', secret);
  const settled = await waitFor(
    () => deliveriesOf('hooli', id),
    (list) => list[0]?.status === 'succeeded',
  );
  expect(settled[0]?.attempts.at(-1)?.status).toBe(200);
  expect(handled).toContain('hooli ops@hooli.example');
});
