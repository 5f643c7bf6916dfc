/**
 * Many tenants on one route, with an inbox, end to end on the broker of this machine: Express reads
 * the account from `/webhooks/:account`, the door verifies with that account's secret and queues the
 * event with its tenant (sealed); a RabbitMQ worker runs it with `ctx.tenant`, retries a failure with an
 * attempt sealed under the tenant's keys (RabbitMQ carries the attempt in the message), and
 * dead-letters an entry a queue writer moved to another tenant without running a handler.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChannelModel } from 'amqplib';
import express from 'express';
import {
  createWebhooks,
  type InboxEntry,
  MemoryStore,
  signPayload,
  type WebhookError,
} from 'service-webhooks';
import { expressWebhooks } from 'service-webhooks/express';
import { rabbitMQInbox, rabbitMQInboxAdmin, startRabbitMQWorker } from 'service-webhooks/rabbitmq';
import { createTestEvent } from 'service-webhooks/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { waitUntil } from '../support/wait-until.js';
import { AMQP_URL, deleteQueues, openConnection, uniqueQueue } from './support.js';

const SECRETS: Record<string, string> = { acme: 'whsec_acme_rmq', globex: 'whsec_globex_rmq' };

let connection: ChannelModel;
const queue = uniqueQueue('tenants');

beforeAll(async () => {
  connection = await openConnection();
});

afterAll(async () => {
  await deleteQueues(connection, queue).catch(() => {});
  await connection?.close();
});

test('two accounts on one route: each event queued with its tenant, run once per tenant with ctx.tenant, retried under its own seal; one moved to another tenant is dead-lettered unrun', async () => {
  const store = new MemoryStore();
  const tenant = { from: { param: 'account' } as const, secret: (account: string) => SECRETS[account] };
  const inbox = rabbitMQInbox({ url: AMQP_URL, queue });
  const door = createWebhooks({ store, inbox, tenant });
  const receiver = createWebhooks({ store, tenant });
  const errors: WebhookError[] = [];
  receiver.onError((error) => {
    errors.push(error);
  });
  const runs: string[] = [];
  receiver.on('user.created', (event, ctx) => {
    runs.push(`${ctx.tenant} ${event.id} attempt ${ctx.attempt}`);
    if (ctx.tenant === 'acme' && ctx.attempt === 1) throw new Error('acme’s CRM is down');
  });
  const app = express();
  app.post('/webhooks/:account', expressWebhooks(door));
  const server: Server = await new Promise((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  const worker = startRabbitMQWorker(receiver, { url: AMQP_URL, queue, attempts: 3, backoff: [200] });
  const admin = rabbitMQInboxAdmin({ url: AMQP_URL, queue });
  try {
    await worker.waitUntilReady();
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const send = (account: string, body: string) =>
      fetch(`${base}/webhooks/${account}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-service-signature': signPayload(body, SECRETS[account]!),
        },
        body,
      });
    const event = createTestEvent('user.created');
    const body = JSON.stringify(event);
    // The same event id for two accounts, and the sender's retry of acme's: two events, each queued once.
    expect((await send('acme', body)).status).toBe(200);
    expect((await send('globex', body)).status).toBe(200);
    expect((await send('acme', body)).headers.get('x-webhook-duplicate')).toBe('true');
    // Signed with acme's secret, posted to globex's address: refused at the door, nothing queued.
    const crossedBody = JSON.stringify(createTestEvent('user.created'));
    const crossed = await fetch(`${base}/webhooks/globex`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-service-signature': signPayload(crossedBody, SECRETS.acme!),
      },
      body: crossedBody,
    });
    expect(crossed.status).toBe(401);

    await waitUntil('both tenants’ events to be handled', () => runs.length === 3, 30_000);
    expect([...runs].sort()).toEqual([
      `acme ${event.id} attempt 1`,
      `acme ${event.id} attempt 2`,
      `globex ${event.id} attempt 1`,
    ]);

    // A queue writer copies an entry of acme's, as a door wrote it (seal and all), under globex's name.
    const written: InboxEntry[] = [];
    const copying = createWebhooks({
      store: new MemoryStore(),
      tenant,
      inbox: { enqueue: async (entry) => void written.push(entry) },
    });
    const other = JSON.stringify(createTestEvent('user.created'));
    await copying.handle({
      body: other,
      headers: { 'x-service-signature': signPayload(other, SECRETS.acme!) },
      params: { account: 'acme' },
    });
    expect(written[0]!.tenant).toBe('acme');
    await inbox.enqueue({ ...written[0]!, tenant: 'globex' }, 'moved');
    await waitUntil(
      'the moved entry to be dead-lettered',
      async () => (await admin.stats()).deadLettered === 1,
      30_000,
    );
    const { items } = await admin.list();
    expect(items[0]!.lastError).toMatch(/^unauthenticated_inbox_entry: /);
    expect(runs).toHaveLength(3);
    expect(errors.filter((error) => error.code === 'unauthenticated_inbox_entry')).toHaveLength(1);
  } finally {
    await worker.close();
    await admin.close();
    await inbox.close();
    await new Promise((resolve) => server.close(resolve));
  }
}, 60_000);
