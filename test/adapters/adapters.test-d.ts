/** The adapters fit their frameworks' own types, with no cast, on every supported major. */
import express from 'express';
import express4 from 'express4';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { createWebhooks } from 'service-webhooks';
import { expressWebhooks } from 'service-webhooks/express';
import { fastifyWebhooks } from 'service-webhooks/fastify';
import { webHandler } from 'service-webhooks/web';
import { expectTypeOf, test } from 'vitest';

const webhooks = createWebhooks({ secret: 'whsec_types' });

test('expressWebhooks mounts on Express 5 and Express 4 with app.post, app.all and app.use', () => {
  const handler = expressWebhooks(webhooks);
  express().post('/webhooks', handler);
  express().all('/webhooks', handler);
  express().use('/webhooks', handler);
  express().post('/webhooks', express.raw({ type: 'application/json' }), handler);
  express4().post('/webhooks', handler);
  express4().all('/webhooks', handler);
  express4().use('/webhooks', handler);
  express4().post('/webhooks', express4.raw({ type: 'application/json' }), handler);
});

test('fastifyWebhooks registers with its options checked', async () => {
  const app = Fastify();
  await app.register(fastifyWebhooks, { webhooks });
  await app.register(fastifyWebhooks, { webhooks, path: '/hooks' });
  // @ts-expect-error the receiver is required
  await app.register(fastifyWebhooks, { path: '/hooks' });
});

test('webHandler is a Fetch handler and fits Hono', () => {
  const handle = webHandler(webhooks);
  expectTypeOf(handle).toBeCallableWith(new Request('https://receiver.example/webhooks'));
  expectTypeOf(handle).returns.toEqualTypeOf<Promise<Response>>();
  new Hono().post('/webhooks', (c) => handle(c.req.raw));
  // A router's parameters, for a receiver with `tenant: { from: { param } }`.
  new Hono().post('/webhooks/:account', (c) => handle(c.req.raw, { params: c.req.param() }));
});
