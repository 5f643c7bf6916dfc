import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type RequestListener,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import express4 from 'express4';
import { createWebhooks, type WebhookError, type Webhooks } from 'service-webhooks';
import { expressWebhooks } from 'service-webhooks/express';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import request from 'supertest';
import { afterEach, describe, expect, test, vi } from 'vitest';
import {
  type AdapterClient,
  runAdapterCases,
  SECRET,
  type SentRequest,
  signedRequest,
} from './adapter-cases.js';
import { listenClient, sendHttp } from './http-client.js';
import { listenUrl, runStreamingCases } from './streaming-cases.js';

type App = Parameters<typeof request>[0];

/** A Buffer passed through as it is (typed as superagent's serializer, which expects a string). */
const identity = (data: unknown) => data as string;

/** A client that goes through supertest, sending the exact bytes given. */
function supertestClient(app: App, path = '/webhooks'): AdapterClient {
  return {
    async send(sent: SentRequest) {
      const agent = request(app);
      const methods = { GET: agent.get, POST: agent.post, PUT: agent.put, DELETE: agent.delete } as const;
      const method = methods[sent.method as keyof typeof methods];
      let test = method.call(agent, path).set(sent.headers);
      // superagent JSON-serialises a Buffer sent as application/json; an identity serializer keeps the bytes.
      if (sent.body.byteLength > 0) test = test.serialize(identity).send(Buffer.from(sent.body));
      const response = await test;
      return {
        status: response.status,
        headers: response.headers as Record<string, string>,
        body: response.text,
      };
    },
    close: async () => {},
  };
}

/** The part of an Express app these tests use, the same on Express 4 and 5. */
type Middleware = (
  request: IncomingMessage & { body?: unknown },
  response: ServerResponse & { json(body: unknown): unknown },
  next: (error?: unknown) => void,
) => unknown;
type ErrorMiddleware = (
  error: unknown,
  request: IncomingMessage,
  response: ServerResponse,
  next: (error?: unknown) => void,
) => unknown;
interface TestApp extends RequestListener {
  post(path: string, ...handlers: Middleware[]): unknown;
  all(path: string, ...handlers: Middleware[]): unknown;
  use(pathOrHandler: string | Middleware | ErrorMiddleware, ...handlers: Middleware[]): unknown;
  set(setting: string, value: unknown): unknown;
}
interface Major {
  major: string;
  create(): TestApp;
  json(): Middleware;
  raw(options: { type: string }): Middleware;
  urlencoded(options: { extended: boolean }): Middleware;
}

// Typed through `Major`: the two majors' own types are not comparable with each other.
const majors = [
  {
    major: 'Express 5',
    create: express,
    json: express.json,
    raw: express.raw,
    urlencoded: express.urlencoded,
  },
  {
    major: 'Express 4',
    create: express4,
    json: express4.json,
    raw: express4.raw,
    urlencoded: express4.urlencoded,
  },
] as unknown as Major[];

for (const { major, create, json, raw, urlencoded } of majors) {
  // app.post: the router sends other methods elsewhere (404), so the handler does not own the route.
  runAdapterCases({
    name: `${major} app.post (supertest)`,
    framedOnTheWire: true,
    ownsRoute: false,
    start: async (webhooks) => {
      const app = create();
      app.post('/webhooks', expressWebhooks(webhooks));
      app.use(json());
      return supertestClient(app);
    },
  });

  // app.use: the handler sees every method on its path and answers 405 to all but POST.
  runAdapterCases({
    name: `${major} app.use (real port)`,
    framedOnTheWire: true,
    ownsRoute: true,
    start: async (webhooks) => {
      const app = create();
      app.use('/webhooks', expressWebhooks(webhooks));
      return listenClient(createServer(app));
    },
  });

  // app.all: the handler sees every method on its path, as with app.use.
  runAdapterCases({
    name: `${major} app.all (real port)`,
    framedOnTheWire: true,
    ownsRoute: true,
    start: async (webhooks) => {
      const app = create();
      app.all('/webhooks', expressWebhooks(webhooks));
      return listenClient(createServer(app));
    },
  });

  runStreamingCases({
    name: major,
    closesRefused: true,
    start: async (webhooks) => {
      const app = create();
      app.post('/webhooks', expressWebhooks(webhooks));
      return listenUrl(createServer(app));
    },
  });

  describe(`${major}: body parsers`, () => {
    const setup = () => {
      const errors: WebhookError[] = [];
      const seen: string[] = [];
      const webhooks: Webhooks = createWebhooks({ secret: SECRET });
      webhooks.on('user.created', (event) => {
        seen.push(event.id);
      });
      webhooks.onError((error) => {
        errors.push(error);
      });
      return { webhooks, errors, seen };
    };
    const post = (app: App, sent = signedRequest(JSON.stringify(createTestEvent('user.created')))) =>
      request(app).post('/webhooks').set(sent.headers).serialize(identity).send(Buffer.from(sent.body));

    test('express.json() ran first: 500 raw_body_unavailable, the fix told to onError, not to the sender', async () => {
      const { webhooks, errors, seen } = setup();
      const app = create();
      app.use(json());
      app.post('/webhooks', expressWebhooks(webhooks));
      const response = await post(app);
      expect(response.status).toBe(500);
      expect(JSON.parse(response.text).error.code).toBe('raw_body_unavailable');
      expect(response.text).not.toContain('express');
      expect(errors).toHaveLength(1);
      expect(errors[0]?.code).toBe('raw_body_unavailable');
      expect(errors[0]?.message).toContain('mount service-webhooks/express before express.json()');
      expect(errors[0]?.message).toContain("express.raw({ type: 'application/json' })");
      expect(seen).toEqual([]);
    });

    test("express.raw({ type: 'application/json' }) on the route: its Buffer is used, 200", async () => {
      const { webhooks, errors, seen } = setup();
      const app = create();
      app.post('/webhooks', raw({ type: 'application/json' }), expressWebhooks(webhooks));
      app.use(json());
      const event = createTestEvent('user.created');
      const response = await post(app, signedRequest(JSON.stringify(event, null, 2)));
      expect(response.status).toBe(200);
      expect(seen).toEqual([event.id]);
      expect(errors).toEqual([]);
    });

    test('a parser for another type ran first (urlencoded): the unread body is still read, 200', async () => {
      const { webhooks, seen } = setup();
      const app = create();
      app.use(urlencoded({ extended: false }));
      app.post('/webhooks', expressWebhooks(webhooks));
      const event = createTestEvent('user.created');
      expect((await post(app, signedRequest(JSON.stringify(event)))).status).toBe(200);
      expect(seen).toEqual([event.id]);
    });

    test('the host app keeps its JSON routes', async () => {
      const { webhooks } = setup();
      const app = create();
      app.post('/webhooks', expressWebhooks(webhooks));
      app.use(json());
      app.post('/echo', (req, res) => {
        res.json({ parsed: req.body });
      });
      const response = await request(app).post('/echo').send({ a: 1 });
      expect(response.body).toEqual({ parsed: { a: 1 } });
    });
  });
}

/** Listen on a free loopback port; the URL of /webhooks and a close that cuts open connections. */
async function listenApp(app: TestApp): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** POST the headers and the first half of a signed 1 kB body, leaving the rest unsent. */
function sendHalf(url: string) {
  const body = Buffer.from(JSON.stringify(createTestEvent('user.created')).padEnd(1000));
  const request = httpRequest(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'content-length': String(body.length),
      'x-service-signature': signPayload(body, SECRET),
    },
  });
  request.on('error', () => {});
  request.write(body.subarray(0, 500));
  return request;
}

for (const { major, create } of majors) {
  describe(`${major}: a client that hangs up mid-body`, () => {
    afterEach(() => {
      vi.restoreAllMocks();
    });

    const setup = async () => {
      const webhooks = createWebhooks({ secret: SECRET });
      webhooks.onError(() => {});
      const app = create();
      // Express's final handler prints the stack of every error it is given, except in env 'test',
      // which is what vitest sets: the app must run as in production for the test to mean anything.
      app.set('env', 'production');
      app.post('/webhooks', expressWebhooks(webhooks));
      return { webhooks, app, server: await listenApp(app) };
    };

    test('prints nothing, gives its bytes back, and the server stays healthy', async () => {
      const { webhooks, server } = await setup();
      const consoleError = vi.spyOn(console, 'error');
      const stderr = vi.spyOn(process.stderr, 'write');
      try {
        const request = sendHalf(server.url);
        await expect.poll(() => webhooks.bodyBudget.inUse).toBe(500);
        request.destroy();
        await expect.poll(() => webhooks.bodyBudget.inUse).toBe(0);
        // What Express would print, it prints in the same turn as the read fails; give it a few more.
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(consoleError).not.toHaveBeenCalled();
        expect(stderr).not.toHaveBeenCalled();

        const after = await sendHttp(
          server.url,
          signedRequest(JSON.stringify(createTestEvent('user.created'))),
        );
        expect(after.status).toBe(200);
      } finally {
        await server.close();
      }
    });

    test('a genuine stream error is still handed to next(error)', async () => {
      const webhooks = createWebhooks({ secret: SECRET });
      const app = create();
      const failure = Object.assign(new Error('inflate failed'), { code: 'Z_DATA_ERROR' });
      const seen: unknown[] = [];
      app.post(
        '/webhooks',
        (request, _response, next) => {
          // A stream error that is not a hang-up, once the adapter is reading.
          request.once('data', () => request.destroy(failure));
          next();
        },
        expressWebhooks(webhooks),
      );
      app.use((error: unknown, _request: IncomingMessage, response: ServerResponse, _next: unknown) => {
        seen.push(error);
        response.end();
      });
      const server = await listenApp(app);
      try {
        sendHalf(server.url);
        await expect.poll(() => seen).toEqual([failure]);
        expect(webhooks.bodyBudget.inUse).toBe(0);
      } finally {
        await server.close();
      }
    });
  });
}
