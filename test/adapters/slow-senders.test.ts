/**
 * A sender that trickles its body (headers, then one byte per second) is cut off by the server's own
 * timeouts, configured as the docs recommend: node:http's `requestTimeout`, enforced every
 * `connectionsCheckingInterval`, so the connection closes within requestTimeout + interval. The same
 * holds for Express (it runs on node:http) and Fastify (its `requestTimeout`, with `http` options
 * passed to node:http). The tests scale the recommended values down to keep each under ~3 s.
 */
import { createServer, type RequestListener, type Server } from 'node:http';
import { connect } from 'node:net';
import express from 'express';
import express4 from 'express4';
import Fastify from 'fastify';
import { createWebhooks, type Webhooks } from 'service-webhooks';
import { expressWebhooks } from 'service-webhooks/express';
import { fastifyWebhooks } from 'service-webhooks/fastify';
import { nodeHandler } from 'service-webhooks/node';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { describe, type ExpectStatic, expect, test } from 'vitest';
import { SECRET } from './adapter-cases.js';

const REQUEST_TIMEOUT_MS = 2_000;
const CHECK_INTERVAL_MS = 500;
/**
 * What the docs document: a request is closed at the first check after its timeout, so at most one
 * interval late. The checks run on a timer from `listen`, and a timer fires late, never early: a
 * request that starts just after a check (as these do, right after listen) is closed a few
 * milliseconds past requestTimeout + interval, which the slack covers.
 */
const TIMER_SLACK_MS = 200;
const BOUND_MS = REQUEST_TIMEOUT_MS + CHECK_INTERVAL_MS + TIMER_SLACK_MS;

/** The node:http options the docs recommend, scaled down. */
const serverOptions = {
  requestTimeout: REQUEST_TIMEOUT_MS,
  headersTimeout: REQUEST_TIMEOUT_MS,
  connectionsCheckingInterval: CHECK_INTERVAL_MS,
};

interface Trickled {
  /** Time from the request's first byte to the connection's close; Infinity if it never closed. */
  closedAfterMs: number;
  /** What the server wrote before closing. */
  received: string;
}

/** Send the headers of a signed 100-byte POST over a raw socket, then one body byte per second. */
function trickle(port: number): Promise<Trickled> {
  const body = JSON.stringify(createTestEvent('user.created')).slice(0, 100).padEnd(100);
  const head = [
    'POST /webhooks HTTP/1.1',
    `Host: 127.0.0.1:${port}`,
    'Content-Type: application/json',
    'Content-Length: 100',
    `X-Service-Signature: ${signPayload(body, SECRET)}`,
    '',
    '',
  ].join('\r\n');
  return new Promise((resolve) => {
    let received = '';
    let started = 0;
    let sent = 0;
    const socket = connect(port, '127.0.0.1', () => {
      started = performance.now();
      socket.write(head);
    });
    const drip = setInterval(() => {
      if (sent < body.length) socket.write(body[sent++]!);
    }, 1_000);
    // Never wait for ever: a connection still open well past the bound is reported as never closed.
    const giveUp = setTimeout(() => {
      closedAfterMs = Number.POSITIVE_INFINITY;
      socket.destroy();
    }, BOUND_MS + 2_000);
    let closedAfterMs: number | undefined;
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      clearInterval(drip);
      clearTimeout(giveUp);
      resolve({ closedAfterMs: closedAfterMs ?? performance.now() - started, received });
    });
  });
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

function receiver(): Webhooks {
  const webhooks = createWebhooks({ secret: SECRET });
  webhooks.onError(() => {});
  return webhooks;
}

/** Trickle into `port` and check the cut-off; `expect` is the test's own, as the tests run concurrently. */
async function expectCutOff(expect: ExpectStatic, port: number, webhooks: Webhooks): Promise<Trickled> {
  const result = await trickle(port);
  expect(result.closedAfterMs).toBeLessThan(BOUND_MS);
  // Closed by the request timeout, not by anything earlier.
  expect(result.closedAfterMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
  // The bytes the trickle had sent are given back to the budget.
  await expect.poll(() => webhooks.bodyBudget.inUse).toBe(0);
  return result;
}

describe.concurrent('a 1-byte-per-second sender is cut off within requestTimeout + connectionsCheckingInterval', () => {
  test('node:http', async ({ expect }) => {
    const webhooks = receiver();
    const server = createServer(serverOptions, nodeHandler(webhooks));
    try {
      const { received } = await expectCutOff(expect, await listen(server), webhooks);
      expect(received).toMatch(/^HTTP\/1\.1 408 /);
    } finally {
      server.close();
    }
  });

  // Typed by what the tests use: the two majors' own types are not comparable with each other.
  const majors = [
    ['Express 5', express],
    ['Express 4', express4],
  ] as unknown as [string, () => RequestListener & { post(path: string, handler: unknown): unknown }][];
  for (const [major, create] of majors) {
    test(`${major} on http.createServer(options, app)`, async ({ expect }) => {
      const webhooks = receiver();
      const app = create();
      app.post('/webhooks', expressWebhooks(webhooks));
      const server = createServer(serverOptions, app);
      try {
        const { received } = await expectCutOff(expect, await listen(server), webhooks);
        expect(received).toMatch(/^HTTP\/1\.1 408 /);
      } finally {
        server.close();
      }
    });
  }

  test('Fastify with requestTimeout and http: { connectionsCheckingInterval }', async ({ expect }) => {
    const webhooks = receiver();
    const app = Fastify({
      requestTimeout: REQUEST_TIMEOUT_MS,
      http: { headersTimeout: REQUEST_TIMEOUT_MS, connectionsCheckingInterval: CHECK_INTERVAL_MS },
    });
    await app.register(fastifyWebhooks, { webhooks });
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { received } = await expectCutOff(
        expect,
        (app.server.address() as { port: number }).port,
        webhooks,
      );
      expect(received).toMatch(/^HTTP\/1\.1 408 /);
    } finally {
      await app.close();
    }
  });
});

describe('the defaults the docs warn about', () => {
  test('node:http: requestTimeout 300 s, headersTimeout 60 s, checked every 30 s', () => {
    const server = createServer();
    expect(server.requestTimeout).toBe(300_000);
    expect(server.headersTimeout).toBe(60_000);
    expect((server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval).toBe(
      30_000,
    );
  });

  test('Fastify turns node:http request timeout off (requestTimeout 0) unless given one', async () => {
    const app = Fastify();
    await app.ready();
    expect(app.server.requestTimeout).toBe(0);
    expect(app.server.timeout).toBe(0);
    await app.close();
  });
});
