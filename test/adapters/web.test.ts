import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import { createWebhooks, type WebhookError } from 'service-webhooks';
import { createTestEvent } from 'service-webhooks/testing';
import { webHandler } from 'service-webhooks/web';
import { describe, expect, test } from 'vitest';
import {
  type AdapterClient,
  bodyOfSize,
  MAX_BODY_BYTES,
  runAdapterCases,
  SECRET,
  signedRequest,
} from './adapter-cases.js';
import { listenClient } from './http-client.js';
import { listenUrl, operationsOn, runStreamingCases, spyStore } from './streaming-cases.js';

const URL_ = 'http://receiver.test/webhooks';

/** A client that calls the handler with a `Request` built in memory, as Bun, Deno or Workers would. */
function directClient(handle: (request: Request) => Promise<Response>): AdapterClient {
  return {
    async send(sent) {
      // A copy typed as Uint8Array<ArrayBuffer>, which BodyInit asks for.
      const body = sent.body.byteLength > 0 ? new Uint8Array(sent.body) : null;
      const response = await handle(new Request(URL_, { method: sent.method, headers: sent.headers, body }));
      const headers: Record<string, string> = {};
      response.headers.forEach((value, name) => {
        headers[name] = value;
      });
      return { status: response.status, headers, body: await response.text() };
    },
    close: async () => {},
  };
}

function honoApp(handle: (request: Request) => Promise<Response>): Hono {
  const app = new Hono();
  // app.all: the handler owns the path and answers 405 itself.
  app.all('/webhooks', (c) => handle(c.req.raw));
  app.post('/echo', async (c) => c.json({ parsed: await c.req.json() }));
  return app;
}

runAdapterCases({
  name: 'Hono on @hono/node-server (real port)',
  ownsRoute: true,
  start: async (webhooks) =>
    listenClient(createServer(getRequestListener(honoApp(webHandler(webhooks)).fetch))),
});

runAdapterCases({
  name: 'direct Request',
  ownsRoute: true,
  start: async (webhooks) => directClient(webHandler(webhooks)),
});

runStreamingCases({
  name: 'Hono on @hono/node-server',
  closesRefused: false,
  start: async (webhooks) => listenUrl(createServer(getRequestListener(honoApp(webHandler(webhooks)).fetch))),
});

describe('web: reading the body', () => {
  const setup = () => {
    const store = spyStore();
    const errors: WebhookError[] = [];
    const seen: string[] = [];
    const webhooks = createWebhooks({ secret: SECRET, maxBodyBytes: MAX_BODY_BYTES, store });
    webhooks.on('user.created', (event) => {
      seen.push(event.id);
    });
    webhooks.onError((error) => {
      errors.push(error);
    });
    return { handle: webHandler(webhooks), store, errors, seen };
  };
  const post = (body: BodyInit, headers: Record<string, string> = {}) =>
    new Request(URL_, { method: 'POST', body, headers, duplex: 'half' } as RequestInit);

  test('a 50 MB stream is read at most 1 MiB past the limit (drained, so the 413 reaches the sender), then cancelled: 413', async () => {
    const { handle, store } = setup();
    const chunk = new Uint8Array(64 * 1024);
    let pulled = 0;
    let cancelled = false;
    const stream = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          if (pulled >= 50 * 1024 * 1024) return controller.close();
          pulled += chunk.byteLength;
          controller.enqueue(chunk);
        },
        cancel() {
          cancelled = true;
        },
      },
      { highWaterMark: 0 },
    );
    const response = await handle(post(stream, { 'content-length': '100' }));
    expect(response.status).toBe(413);
    expect((await response.json()).error.code).toBe('payload_too_large');
    // Kept: nothing past the limit. Read and dropped: at most 1 MiB more, then the rest is cancelled.
    expect(pulled).toBeLessThanOrEqual(MAX_BODY_BYTES + 1024 * 1024 + 2 * chunk.byteLength);
    expect(pulled).toBeLessThan(2 * 1024 * 1024);
    await sleep(0);
    expect(cancelled).toBe(true);
    expect(store.calls).toEqual([]);
  });

  test('an announced Content-Length over the limit: 413 before reading a byte', async () => {
    const { handle } = setup();
    let pulled = 0;
    const stream = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          pulled++;
          controller.enqueue(new Uint8Array(10));
        },
      },
      { highWaterMark: 0 },
    );
    const response = await handle(post(stream, { 'content-length': String(50 * 1024 * 1024) }));
    expect(response.status).toBe(413);
    expect(pulled).toBe(0);
  });

  test('a slow sender cannot hold a claim: the store is untouched until the stream closed', async () => {
    const { handle, store, seen } = setup();
    const event = createTestEvent('user.created');
    const { body, headers } = signedRequest(JSON.stringify(event));
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        controller = c;
      },
    });
    const half = Math.floor(body.byteLength / 2);
    controller.enqueue(body.subarray(0, half));
    const answered = handle(post(stream, headers));
    await sleep(100);
    expect(store.calls).toEqual([]);
    expect(seen).toEqual([]);
    controller.enqueue(body.subarray(half));
    controller.close();
    expect((await answered).status).toBe(200);
    expect(operationsOn(store, event.id)).toEqual(['claim', 'complete']);
    expect(store.calls).toHaveLength(2);
    expect(seen).toEqual([event.id]);
  });

  test('a body already read: 500 raw_body_unavailable, the fix told to onError, not to the sender', async () => {
    const { handle, errors } = setup();
    const { body, headers } = signedRequest(JSON.stringify(createTestEvent('user.created')));
    const request = post(new Uint8Array(body), headers);
    await request.text();
    const response = await handle(request);
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(JSON.parse(text).error.code).toBe('raw_body_unavailable');
    expect(text).not.toContain('bodyUsed');
    expect(errors[0]?.message).toContain('c.req.raw');
  });

  test('Hono: a middleware that parsed the body first gives 500 raw_body_unavailable', async () => {
    const { handle, errors } = setup();
    const app = new Hono();
    app.use('/webhooks', async (c, next) => {
      await c.req.json();
      await next();
    });
    app.post('/webhooks', (c) => handle(c.req.raw));
    const { body, headers } = signedRequest(JSON.stringify(createTestEvent('user.created')));
    const response = await app.request('/webhooks', {
      method: 'POST',
      body: new Uint8Array(body),
      headers,
    });
    expect(response.status).toBe(500);
    expect(errors.map((error) => error.code)).toEqual(['raw_body_unavailable']);
  });

  test('Hono: the app keeps its own JSON routes', async () => {
    const app = honoApp(setup().handle);
    const response = await app.request('/echo', { method: 'POST', body: '{"a":1}' });
    expect(await response.json()).toEqual({ parsed: { a: 1 } });
  });

  test('edge-safe: the adapter and its internals import no node: module and use no Buffer', () => {
    for (const file of [
      '../../adapters/web.ts',
      '../../adapters/internal/answer-web-request.ts',
      '../../adapters/internal/read-web-body.ts',
      '../../adapters/internal/refused-body.ts',
    ]) {
      const source = readFileSync(new URL(file, import.meta.url), 'utf8');
      expect(source, file).not.toMatch(/from ['"]node:|\bBuffer\.|\brequire\(/);
    }
  });
});

describe('web: the body budget, with Request objects built in memory', () => {
  const setup = () => {
    const webhooks = createWebhooks({ secret: SECRET, maxBodyBytes: 1024, maxBodyBytesInFlight: 1024 });
    webhooks.on('user.created', () => {});
    webhooks.onError(() => {});
    return { budget: webhooks.bodyBudget, handle: webHandler(webhooks) };
  };
  /** A signed delivery of `size` bytes whose body the test enqueues piece by piece. */
  const pending = (size: number) => {
    const { body, headers } = signedRequest(bodyOfSize(size));
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        controller = c;
      },
    });
    const request = new Request(URL_, {
      method: 'POST',
      body: stream,
      headers,
      duplex: 'half',
    } as RequestInit);
    return { body, controller, request };
  };

  test('a stream still open holds its bytes: another delivery gets 503 receiver_busy; its end gives them back', async () => {
    const { budget, handle } = setup();
    const slow = pending(1000);
    slow.controller.enqueue(slow.body.subarray(0, 700));
    const answered = handle(slow.request);
    await expect.poll(() => budget.inUse).toBe(700);

    const { body, headers } = signedRequest(bodyOfSize(600));
    const busy = await handle(new Request(URL_, { method: 'POST', body: new Uint8Array(body), headers }));
    expect(busy.status).toBe(503);
    expect(busy.headers.get('retry-after')).toMatch(/^\d+$/);
    expect((await busy.json()).error.code).toBe('receiver_busy');
    expect(budget.inUse).toBe(700);

    slow.controller.enqueue(slow.body.subarray(700));
    slow.controller.close();
    expect((await answered).status).toBe(200);
    expect(budget.inUse).toBe(0);
  });

  test('a stream that errors mid-body gives its bytes back', async () => {
    const { budget, handle } = setup();
    const broken = pending(1000);
    broken.controller.enqueue(broken.body.subarray(0, 700));
    const answered = handle(broken.request);
    await expect.poll(() => budget.inUse).toBe(700);
    broken.controller.error(new Error('the client went away'));
    await expect(answered).rejects.toThrow('the client went away');
    expect(budget.inUse).toBe(0);
  });
});
