import { request as httpRequest } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import { createWebhooks } from 'service-webhooks';
import { fastifyWebhooks } from 'service-webhooks/fastify';
import { createTestEvent } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type AdapterClient, bodyOfSize, runAdapterCases, SECRET, signedRequest } from './adapter-cases.js';
import { sendHttp } from './http-client.js';
import { runStreamingCases } from './streaming-cases.js';

/** A client that goes through `app.inject`, no socket. */
function injectClient(app: FastifyInstance): AdapterClient {
  return {
    async send(sent) {
      const response = await app.inject({
        method: sent.method as 'POST',
        url: '/webhooks',
        headers: sent.headers,
        payload: Buffer.from(sent.body),
      });
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(response.headers)) {
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
      }
      return { status: response.statusCode, headers, body: response.body };
    },
    close: () => app.close(),
  };
}

async function listen(app: FastifyInstance): Promise<string> {
  return app.listen({ port: 0, host: '127.0.0.1' });
}

runAdapterCases({
  name: 'Fastify inject',
  ownsRoute: true,
  start: async (webhooks) => {
    const app = Fastify();
    await app.register(fastifyWebhooks, { webhooks });
    return injectClient(app);
  },
});

runAdapterCases({
  name: 'Fastify real port',
  framedOnTheWire: true,
  ownsRoute: true,
  start: async (webhooks) => {
    const app = Fastify();
    await app.register(fastifyWebhooks, { webhooks });
    const base = await listen(app);
    return { send: (sent) => sendHttp(`${base}/webhooks`, sent), close: () => app.close() };
  },
});

runStreamingCases({
  name: 'Fastify',
  closesRefused: true,
  start: async (webhooks) => {
    const app = Fastify();
    await app.register(fastifyWebhooks, { webhooks });
    const base = await listen(app);
    return { url: `${base}/webhooks`, close: () => app.close() };
  },
});

describe('Fastify: the raw parser is scoped to the webhook route', () => {
  const app = Fastify();
  const seen: string[] = [];
  const webhooks = createWebhooks({ secret: SECRET });
  webhooks.on('user.created', (event) => {
    seen.push(event.id);
  });
  beforeAll(async () => {
    // Routes declared before and after the plugin, and in a sibling plugin, all keep JSON parsing.
    app.post('/before', async (request) => ({ parsed: request.body }));
    await app.register(fastifyWebhooks, { webhooks, path: '/hooks/service' });
    app.post('/after', async (request) => ({ parsed: request.body }));
    await app.register(async (sibling) => {
      sibling.post('/sibling', async (request) => ({ parsed: request.body }));
    });
  });
  afterAll(() => app.close());

  test('the host app routes still receive parsed objects', async () => {
    for (const url of ['/before', '/after', '/sibling']) {
      const response = await app.inject({ method: 'POST', url, payload: { a: 1 } });
      expect(response.json(), url).toEqual({ parsed: { a: 1 } });
    }
  });

  test('the host app keeps refusing content types it has no parser for', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/after',
      headers: { 'content-type': 'application/octet-stream' },
      payload: Buffer.from('xyz'),
    });
    expect(response.statusCode).toBe(415);
  });

  test('the webhook route on its custom path gets the exact bytes', async () => {
    const event = createTestEvent('user.created');
    const sent = signedRequest(JSON.stringify(event, null, 2));
    const response = await app.inject({
      method: 'POST',
      url: '/hooks/service',
      headers: sent.headers,
      payload: Buffer.from(sent.body),
    });
    expect(response.statusCode).toBe(200);
    expect(seen).toEqual([event.id]);
  });

  test('a delivery without a content type is still read raw', async () => {
    const event = createTestEvent('user.created');
    const { 'content-type': _, ...headers } = signedRequest(JSON.stringify(event)).headers;
    const response = await app.inject({
      method: 'POST',
      url: '/hooks/service',
      headers,
      payload: Buffer.from(JSON.stringify(event)),
    });
    expect(response.statusCode).toBe(200);
    expect(seen).toContain(event.id);
  });
});

describe("Fastify: the route's body limit is maxBodyBytes, whatever the host's bodyLimit", () => {
  test('a host bodyLimit smaller than maxBodyBytes does not refuse a delivery within maxBodyBytes', async () => {
    const app = Fastify({ bodyLimit: 100 });
    const webhooks = createWebhooks({ secret: SECRET, maxBodyBytes: 8 * 1024 });
    await app.register(fastifyWebhooks, { webhooks });
    const sent = signedRequest(bodyOfSize(4 * 1024));
    const response = await app.inject({
      method: 'POST',
      url: '/webhooks',
      headers: sent.headers,
      payload: Buffer.from(sent.body),
    });
    expect(response.statusCode).toBe(200);
    await app.close();
  });
});

describe("Fastify: a malformed Content-Type gets the core's answer, not Fastify's 415", () => {
  const app = Fastify();
  const seen: string[] = [];
  const webhooks = createWebhooks({ secret: SECRET });
  webhooks.on('user.created', (event) => {
    seen.push(event.id);
  });
  let base = '';
  beforeAll(async () => {
    await app.register(fastifyWebhooks, { webhooks });
    app.post('/host', async (request) => ({ parsed: request.body }));
    base = await listen(app);
  });
  afterAll(() => app.close());

  // Fastify 5 answers each of these but the first (which it tolerates) 415 FST_ERR_CTP_INVALID_MEDIA_TYPE
  // before any parser runs.
  const malformed = ['application/json;;', '@@@', 'text/', '', '/', 'application/json,application/json'];

  test.each(malformed)('Content-Type %j over a real socket: 200, handled', async (contentType) => {
    const event = createTestEvent('user.created');
    const sent = signedRequest(JSON.stringify(event), { 'content-type': contentType });
    const response = await sendHttp(`${base}/webhooks`, sent);
    expect(response.status).toBe(200);
    expect(JSON.parse(response.body)).toEqual({ received: true });
    expect(seen).toContain(event.id);
  });

  test.each(malformed)('Content-Type %j through inject: 200, handled', async (contentType) => {
    const event = createTestEvent('user.created');
    const sent = signedRequest(JSON.stringify(event), { 'content-type': contentType });
    const response = await app.inject({
      method: 'POST',
      url: '/webhooks',
      headers: sent.headers,
      payload: Buffer.from(sent.body),
    });
    expect(response.statusCode).toBe(200);
    expect(seen).toContain(event.id);
  });

  test("a malformed Content-Type with a forged signature still gets the core's 401", async () => {
    const sent = signedRequest(JSON.stringify(createTestEvent('user.created')), {
      'content-type': '@@@',
      'x-service-signature': `sha256=${'0'.repeat(64)}`,
    });
    const response = await sendHttp(`${base}/webhooks`, sent);
    expect(response.status).toBe(401);
    expect(JSON.parse(response.body).error.code).toBe('invalid_signature');
  });

  test('no Content-Type, chunked over a real socket: 200, handled', async () => {
    const event = createTestEvent('user.created');
    const { body, headers } = signedRequest(JSON.stringify(event));
    const { 'content-type': _, ...withoutType } = headers;
    const status = await new Promise<number>((resolve, reject) => {
      const request = httpRequest(
        `${base}/webhooks`,
        { method: 'POST', headers: withoutType },
        (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode ?? 0));
        },
      );
      request.on('error', reject);
      // Two writes without a Content-Length: sent chunked.
      request.write(body.subarray(0, 10));
      request.end(body.subarray(10));
    });
    expect(status).toBe(200);
    expect(seen).toContain(event.id);
  });

  test("the host app's own routes still refuse a malformed Content-Type (the hook is the route's own)", async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/host',
      headers: { 'content-type': '@@@' },
      payload: '{"a":1}',
    });
    expect(response.statusCode).toBe(415);
    expect(response.json().code).toBe('FST_ERR_CTP_INVALID_MEDIA_TYPE');
  });
});
