/**
 * What the sandbox sends, seen by a bare node:http receiver in this process: signature, envelope,
 * routing by subscription, the /test endpoint, payments, and the https-only rule.
 */

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifySignature } from 'service-webhooks';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Delivery, type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { api, waitFor } from './support.js';

interface Received {
  path: string;
  body: string;
  signature: string | undefined;
}

let received: Received[] = [];
let receiver: Server;
let receiverUrl: string;
let sandbox: Sandbox;

beforeAll(async () => {
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      // A receiver that never answers: the sender's timeout must end the attempt.
      if (request.url === '/hang') return;
      const signature = request.headers['x-service-signature'];
      received.push({
        path: request.url ?? '',
        body: Buffer.concat(chunks).toString('utf8'),
        signature: typeof signature === 'string' ? signature : undefined,
      });
      response.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  sandbox = await startSandbox({ port: 0, allowHttp: true, timeScale: 0.001, rateLimit: 10_000 });
});

beforeEach(() => {
  received = [];
});

afterAll(async () => {
  await sandbox?.close();
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
});

async function register(path: string, events: string[], secret: string): Promise<string> {
  const created = await api(sandbox.url, 'POST', '/webhooks', {
    url: `${receiverUrl}${path}`,
    events,
    secret,
  });
  return (created.body as { id: string }).id;
}

async function settledDeliveries(query: string, count: number): Promise<Delivery[]> {
  return waitFor(
    async () =>
      ((await api(sandbox.url, 'GET', `/sandbox/deliveries?${query}`)).body as { data: Delivery[] }).data,
    (list) => list.length === count && list.every((delivery) => delivery.status !== 'pending'),
  );
}

describe('deliveries', () => {
  it('signs each delivery with its registration secret and sends the full envelope', async () => {
    const a = await register('/a', ['user.created'], 'whsec_a');
    const b = await register('/b', ['user.created', 'user.deleted'], 'whsec_b');
    await register('/c', ['project.created'], 'whsec_c');
    const created = await api(sandbox.url, 'POST', '/users', { name: 'Ada', email: 'ada@example.com' });
    const user = created.body as { id: string };

    const [toA] = await settledDeliveries(`webhook_id=${a}`, 1);
    await settledDeliveries(`webhook_id=${b}`, 1);
    // Two registrations subscribe: the event leaves with 2 pending; each attempt counts those left.
    expect(toA?.event.pending_webhooks).toBe(2);
    for (const entry of received) expect([1, 2]).toContain(JSON.parse(entry.body).pending_webhooks);
    expect(received.map((entry) => entry.path).sort()).toEqual(['/a', '/b']);
    for (const entry of received) {
      const secret = entry.path === '/a' ? 'whsec_a' : 'whsec_b';
      expect(verifySignature(entry.body, entry.signature, secret)).toEqual({ ok: true, secretIndex: 0 });
      expect(JSON.parse(entry.body)).toEqual({
        id: expect.stringMatching(/^evt_/),
        type: 'user.created',
        created: expect.any(Number),
        data: { object: 'user', ...(created.body as object) },
        livemode: false,
        pending_webhooks: expect.any(Number),
        request: { id: created.headers.get('x-request-id') },
      });
    }
    // Both deliveries carry the same event.
    expect(new Set(received.map((entry) => JSON.parse(entry.body).id)).size).toBe(1);
    expect(user.id).toMatch(/^usr_/);
  });

  it('delivers a test event with POST /webhooks/:id/test, of the type asked for', async () => {
    const id = await register('/test', ['project.updated'], 'whsec_t');
    const answer = await api(sandbox.url, 'POST', `/webhooks/${id}/test`, { type: 'payment.failed' });
    expect(answer.status).toBe(202);
    const [delivery] = await settledDeliveries(`webhook_id=${id}`, 1);
    expect(delivery).toMatchObject({ status: 'succeeded', event_type: 'payment.failed' });
    expect(JSON.parse(received[0]!.body)).toMatchObject({
      type: 'payment.failed',
      livemode: false,
      data: { object: 'payment' },
    });
  });

  it('emits payment events from the sandbox trigger, refunds included', async () => {
    const id = await register('/pay', ['payment.succeeded', 'payment.refunded'], 'whsec_p');
    const paid = await api(sandbox.url, 'POST', '/sandbox/payments', {
      outcome: 'succeeded',
      amount: 1200,
      currency: 'eur',
    });
    const payment = paid.body as { id: string };
    expect(paid.body).toMatchObject({ amount: 1200, currency: 'eur', status: 'succeeded' });
    const refunded = await api(sandbox.url, 'POST', '/sandbox/payments', {
      outcome: 'refunded',
      payment: payment.id,
    });
    expect(refunded.body).toMatchObject({ id: payment.id, status: 'refunded' });
    const again = await api(sandbox.url, 'POST', '/sandbox/payments', {
      outcome: 'refunded',
      payment: payment.id,
    });
    expect(again.body).toMatchObject({ error: { code: 'INVALID_REQUEST', details: { field: 'payment' } } });

    const list = await settledDeliveries(`webhook_id=${id}`, 2);
    expect(list.map((delivery) => delivery.event_type).sort()).toEqual([
      'payment.refunded',
      'payment.succeeded',
    ]);
    for (const delivery of list) expect(delivery.event.data.id).toBe(payment.id);
  });

  it('skips delivery to an http:// registration when restarted without allowHttp', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'sandbox-https-'));
    const dataFile = join(directory, 'data.json');
    try {
      const registration = {
        id: 'wh_saved',
        url: `${receiverUrl}/saved`,
        events: ['user.created'],
        secret: 's',
        created_at: new Date().toISOString(),
      };
      await writeFile(dataFile, JSON.stringify({ version: 1, webhooks: [registration] }));
      const strict = await startSandbox({ port: 0, dataFile });
      try {
        await api(strict.url, 'POST', '/users', { name: 'Ada', email: 'ada@example.com' });
        const [delivery] = await waitFor(
          async () =>
            ((await api(strict.url, 'GET', '/sandbox/deliveries')).body as { data: Delivery[] }).data,
          (list) => list[0]?.status === 'failed',
        );
        expect(delivery?.attempts).toHaveLength(1);
        expect(delivery?.attempts[0]?.error).toContain('https://');
        expect(received).toEqual([]);
      } finally {
        await strict.close();
      }
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it('counts an attempt that gets no answer within the timeout as failed, and retries it', async () => {
    const impatient = await startSandbox({
      port: 0,
      allowHttp: true,
      timeScale: 0.001,
      attemptTimeoutMs: 200,
    });
    try {
      await api(impatient.url, 'POST', '/webhooks', { url: `${receiverUrl}/hang`, events: ['user.created'] });
      await api(impatient.url, 'POST', '/users', { name: 'Ada', email: 'ada@example.com' });
      const [delivery] = await waitFor(
        async () =>
          ((await api(impatient.url, 'GET', '/sandbox/deliveries')).body as { data: Delivery[] }).data,
        (list) => list[0]?.status === 'failed',
      );
      expect(delivery?.attempts.map((attempt) => [attempt.status, attempt.error])).toEqual(
        Array.from({ length: 4 }, () => [null, 'timed out after 200 ms']),
      );
      for (const attempt of delivery?.attempts ?? []) expect(attempt.duration_ms).toBeGreaterThanOrEqual(190);
    } finally {
      await impatient.close();
    }
  });
});
