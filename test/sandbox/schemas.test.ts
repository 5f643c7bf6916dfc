/**
 * Issue 34: every event the sandbox can send passes the first-party schemas, on a real receiver
 * (`service-webhooks/node` on node:http, `schemas: eventSchemas`) that the sandbox delivers to over
 * HTTP: each of the nine types is triggered through the sandbox's API and handled. And one of those
 * events, mutated and re-signed, is refused with the path of what was broken.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type AnyWebhookEvent,
  createWebhooks,
  EVENT_TYPES,
  EventSchemaError,
  MemoryStore,
  type WebhookError,
} from 'service-webhooks';
import { nodeHandler } from 'service-webhooks/node';
import { eventSchemas } from 'service-webhooks/schemas';
import { deliver } from 'service-webhooks/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { api, waitFor } from './support.js';

const secret = 'whsec_sandbox_schemas';
const handled: AnyWebhookEvent[] = [];
const errors: WebhookError[] = [];
const webhooks = createWebhooks({ secret, store: new MemoryStore(), schemas: eventSchemas });
webhooks.onAny((event) => {
  handled.push(event);
});
webhooks.onError((error) => {
  errors.push(error);
});

let receiver: Server;
let sandbox: Sandbox;

beforeAll(async () => {
  receiver = createServer(nodeHandler(webhooks));
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  sandbox = await startSandbox({ port: 0, allowHttp: true, timeScale: 0.001, rateLimit: 10_000 });
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks`;
  await api(sandbox.url, 'POST', '/webhooks', { url, events: [...EVENT_TYPES], secret });
});

afterAll(async () => {
  await sandbox?.close();
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
});

test('all nine event types the sandbox sends pass the first-party schemas and are handled', async () => {
  const user = (await api(sandbox.url, 'POST', '/users', { name: 'Ada', email: 'ada@example.com' })).body as {
    id: string;
  };
  await api(sandbox.url, 'PUT', `/users/${user.id}`, { name: 'Ada Lovelace', email: 'ada@example.org' });
  await api(sandbox.url, 'DELETE', `/users/${user.id}`);
  const project = (await api(sandbox.url, 'POST', '/projects', { name: 'Engine' })).body as { id: string };
  await api(sandbox.url, 'PUT', `/projects/${project.id}`, { name: 'Analytical Engine' });
  await api(sandbox.url, 'DELETE', `/projects/${project.id}`);
  const paid = (
    await api(sandbox.url, 'POST', '/sandbox/payments', {
      outcome: 'succeeded',
      amount: 1200,
      currency: 'eur',
    })
  ).body as { id: string };
  await api(sandbox.url, 'POST', '/sandbox/payments', { outcome: 'refunded', payment: paid.id });
  await api(sandbox.url, 'POST', '/sandbox/payments', { outcome: 'failed', amount: 500, currency: 'eur' });

  await waitFor(
    async () => new Set(handled.map((event) => event.type)).size,
    (types) => types === EVENT_TYPES.length,
  );
  expect(new Set(handled.map((event) => event.type))).toEqual(new Set(EVENT_TYPES));
  expect(errors).toEqual([]);
});

test('a sandbox event mutated and re-signed fails with the path of what was broken', async () => {
  const sent = handled.find((event) => event.type === 'user.updated')!;
  const mutated = { ...sent, id: `${sent.id}_mutated`, data: { ...sent.data, email: 42 } };
  const response = await deliver(webhooks, mutated as never, { secret });
  expect(response.status).toBe(500);
  const error = errors.at(-1) as EventSchemaError;
  expect(error).toBeInstanceOf(EventSchemaError);
  expect(error.issues).toEqual([{ path: ['data', 'email'], message: 'must be an e-mail address' }]);
});
