/**
 * One route, three tenants, three secrets, through each adapter's own idiom: Express `req.params` and
 * Fastify `request.params` over real HTTP with the real frameworks, Lambda `pathParameters` in the
 * API Gateway REST (v1) and HTTP API (v2) events and the path of a Function URL event (the events as
 * AWS documents them, test/adapters/fixtures), node:http and a Fetch runtime by URL (and Hono's
 * parameters), Next.js's route params as Next.js passes them (a promise of the segments; a real
 * Next.js build runs in test/adapters/next.test.ts, too heavy to repeat here for one argument).
 *
 * Each receiver: every tenant's event handled with `ctx.tenant` naming it; a body signed for one
 * tenant replayed to another's path refused 401; the same event id under two tenants handled twice
 * and a retry under one tenant a duplicate; an unknown tenant 404 with no handler run.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEvent, APIGatewayProxyEventV2 } from 'aws-lambda';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { type AnyWebhooks, createWebhooks, signPayload, type TenantSource } from 'service-webhooks';
import { expressWebhooks } from 'service-webhooks/express';
import { fastifyWebhooks } from 'service-webhooks/fastify';
import { lambdaHandler } from 'service-webhooks/lambda';
import { nextPagesHandler, nextRouteHandler } from 'service-webhooks/next';
import { nodeHandler } from 'service-webhooks/node';
import { createTestEvent } from 'service-webhooks/testing';
import { webHandler } from 'service-webhooks/web';
import { describe, expect, test } from 'vitest';
import { functionUrlEvent, httpApiEvent, lambdaContext, restApiEvent } from './fixtures/lambda-events.js';
import { sendHttp } from './http-client.js';

const SECRETS: Readonly<Record<string, string>> = {
  acme: 'whsec_tenant_acme',
  globex: 'whsec_tenant_globex',
  initech: 'whsec_tenant_initech',
};

/** Sends one signed body to a tenant's address and answers `status code`. */
type Send = (tenant: string, body: string, signedWith: string) => Promise<{ status: number; body: string }>;

interface Served {
  send: Send;
  close(): Promise<void>;
}

function receiver(from: TenantSource) {
  const handled: string[] = [];
  const webhooks = createWebhooks({ tenant: { from, secret: (account) => SECRETS[account] } });
  webhooks.on('user.created', (event, ctx) => {
    handled.push(`${ctx.tenant} ${event.id}`);
  });
  return { webhooks, handled };
}

const signed = (body: string, secret: string) => ({
  'content-type': 'application/json',
  'x-service-signature': signPayload(body, secret),
});

/** A POST of `body` signed with `secret`, its bytes as a request carries them. */
const signedPost = (body: string, secret: string) => ({
  method: 'POST',
  headers: signed(body, secret),
  body: new TextEncoder().encode(body),
});

/** Sends over real HTTP to the server on `port`, at the tenant's path. */
const sendOverHttp =
  (port: number, pathFor: (tenant: string) => string): Send =>
  (tenant, body, secret) =>
    sendHttp(`http://127.0.0.1:${port}${pathFor(tenant)}`, signedPost(body, secret));

async function listen(
  server: ReturnType<typeof createServer>,
  pathFor: (tenant: string) => string,
): Promise<Served> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    send: sendOverHttp(port, pathFor),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const codeOf = ({ status, body }: { status: number; body: string }) =>
  status === 200
    ? body.includes('"duplicate":true')
      ? 'duplicate'
      : 200
    : `${status} ${JSON.parse(body).error.code}`;

/** The same checks for every adapter. */
function servesThreeTenants(
  name: string,
  from: TenantSource,
  start: (webhooks: AnyWebhooks) => Promise<Served>,
) {
  describe(`${name}: three tenants on one route`, () => {
    test('each tenant verified with its own secret; ctx.tenant names it; replay across tenants refused; dedup per tenant; unknown 404', async () => {
      const { webhooks, handled } = receiver(from);
      const served = await start(webhooks);
      try {
        const events = Object.keys(SECRETS).map((tenant) => ({
          tenant,
          event: createTestEvent('user.created'),
        }));
        for (const { tenant, event } of events)
          expect(codeOf(await served.send(tenant, JSON.stringify(event), SECRETS[tenant]!))).toBe(200);
        expect(handled).toEqual(events.map(({ tenant, event }) => `${tenant} ${event.id}`));

        // A body signed for acme, replayed to globex's address.
        const acmeBody = JSON.stringify(events[0]!.event);
        expect(codeOf(await served.send('globex', acmeBody, SECRETS.acme!))).toBe('401 invalid_signature');
        // The same event id under initech (signed with its secret) is initech's event: handled.
        const shared = createTestEvent('user.created');
        const sharedBody = JSON.stringify(shared);
        expect(codeOf(await served.send('acme', sharedBody, SECRETS.acme!))).toBe(200);
        expect(codeOf(await served.send('initech', sharedBody, SECRETS.initech!))).toBe(200);
        expect(codeOf(await served.send('acme', sharedBody, SECRETS.acme!))).toBe('duplicate');
        expect(codeOf(await served.send('hooli', sharedBody, SECRETS.acme!))).toBe('404 unknown_tenant');
        expect(handled.slice(3)).toEqual([`acme ${shared.id}`, `initech ${shared.id}`]);
      } finally {
        await served.close();
      }
    });
  });
}

servesThreeTenants('express', { param: 'account' }, async (webhooks) => {
  const app = express();
  const router = express.Router();
  router.post('/:account', expressWebhooks(webhooks));
  // Mounted under a router: `req.params` is the router's, `originalUrl` keeps the mount path.
  app.use('/webhooks', router);
  app.use(express.json());
  return listen(createServer(app), (tenant) => `/webhooks/${tenant}`);
});

servesThreeTenants('fastify', { param: 'account' }, async (webhooks) => {
  const app = Fastify();
  await app.register(fastifyWebhooks, { webhooks, path: '/webhooks/:account' });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return { send: sendOverHttp(port, (tenant) => `/webhooks/${tenant}`), close: () => app.close() };
});

/** The documented example event, routed as API Gateway routes `/webhooks/{account}` (REST API, v1). */
function restApiRouted(tenant: string, body: string, secret: string): APIGatewayProxyEvent {
  const event = restApiEvent({ ...signedPost(body, secret), base64: false });
  return {
    ...event,
    resource: '/webhooks/{account}',
    path: `/webhooks/${tenant}`,
    pathParameters: { account: tenant },
    requestContext: {
      ...event.requestContext,
      resourcePath: '/webhooks/{account}',
      path: `/prod/webhooks/${tenant}`,
    },
  };
}

/** The same for an HTTP API (payload 2.0): `routeKey` and `rawPath` name the route, `pathParameters` the segment. */
function httpApiRouted(tenant: string, body: string, secret: string): APIGatewayProxyEventV2 {
  const event = httpApiEvent({ ...signedPost(body, secret), base64: true });
  return {
    ...event,
    routeKey: 'POST /webhooks/{account}',
    rawPath: `/webhooks/${tenant}`,
    pathParameters: { account: tenant },
    requestContext: {
      ...event.requestContext,
      routeKey: 'POST /webhooks/{account}',
      http: { ...event.requestContext.http, path: `/webhooks/${tenant}` },
    },
  };
}

/** A Function URL routes nothing: the whole path arrives in `rawPath`, the tenant read by `{ path }`. */
function functionUrlRouted(tenant: string, body: string, secret: string): APIGatewayProxyEventV2 {
  const event = functionUrlEvent({ ...signedPost(body, secret), base64: false });
  return {
    ...event,
    rawPath: `/webhooks/${tenant}`,
    requestContext: {
      ...event.requestContext,
      http: { ...event.requestContext.http, path: `/webhooks/${tenant}` },
    },
  };
}

const lambdaServed =
  (build: (tenant: string, body: string, secret: string) => APIGatewayProxyEvent | APIGatewayProxyEventV2) =>
  async (webhooks: AnyWebhooks): Promise<Served> => {
    const handler = lambdaHandler(webhooks);
    return {
      send: async (tenant, body, secret) => {
        const result = await handler(build(tenant, body, secret) as APIGatewayProxyEvent, lambdaContext());
        return { status: result.statusCode, body: result.body };
      },
      close: async () => {},
    };
  };

servesThreeTenants('lambda, API Gateway REST API (v1)', { param: 'account' }, lambdaServed(restApiRouted));
servesThreeTenants(
  'lambda, API Gateway HTTP API (v2), base64 body',
  { param: 'account' },
  lambdaServed(httpApiRouted),
);
servesThreeTenants('lambda, Function URL', { path: '/webhooks/:account' }, lambdaServed(functionUrlRouted));

servesThreeTenants('node:http', { path: '/webhooks/:account' }, async (webhooks) =>
  listen(createServer(nodeHandler(webhooks)), (tenant) => `/webhooks/${tenant}`),
);

servesThreeTenants('node:http, tenant in the query', { query: 'account' }, async (webhooks) =>
  listen(createServer(nodeHandler(webhooks)), (tenant) => `/webhooks?account=${tenant}`),
);

/** A Fetch handler called with real `Request`s, as Bun, Deno or Workers call it. */
const fetchServed =
  (handle: (request: Request) => Promise<Response>, url: (tenant: string) => string) =>
  async (): Promise<Served> => ({
    send: async (tenant, body, secret) => {
      const response = await handle(
        new Request(url(tenant), { method: 'POST', headers: signed(body, secret), body }),
      );
      return { status: response.status, body: await response.text() };
    },
    close: async () => {},
  });

servesThreeTenants('web (Fetch), by URL', { path: '/webhooks/:account' }, async (webhooks) =>
  fetchServed(webHandler(webhooks), (tenant) => `https://receiver.example/webhooks/${tenant}`)(),
);

servesThreeTenants(
  'web (Fetch) under Hono, by its route parameters',
  { param: 'account' },
  async (webhooks) => {
    const handle = webHandler(webhooks);
    const app = new Hono().post('/webhooks/:account', (c) => handle(c.req.raw, { params: c.req.param() }));
    return fetchServed(
      (request) => Promise.resolve(app.fetch(request)),
      (tenant) => `https://receiver.example/webhooks/${tenant}`,
    )();
  },
);

servesThreeTenants('next App Router, by its route params', { param: 'account' }, async (webhooks) => {
  const POST = nextRouteHandler(webhooks);
  // As Next.js 15 calls `app/webhooks/[account]/route.ts`: the segments as a promise.
  return {
    send: async (tenant, body, secret) => {
      const request = new Request(`https://receiver.example/webhooks/${tenant}`, {
        method: 'POST',
        headers: signed(body, secret),
        body,
      });
      const response = await POST(request, { params: Promise.resolve({ account: tenant }) });
      return { status: response.status, body: await response.text() };
    },
    close: async () => {},
  };
});

servesThreeTenants('next Pages Router, by req.query', { param: 'account' }, async (webhooks) => {
  const handler = nextPagesHandler(webhooks);
  // As Next.js serves `pages/api/webhooks/[account].ts` with `bodyParser: false`: the segment in req.query.
  const server = createServer((request, response) => {
    const account = new URL(request.url ?? '/', 'http://x').pathname.split('/').at(-1);
    Object.assign(request, { query: { account } });
    void handler(request, response);
  });
  return listen(server, (tenant) => `/api/webhooks/${tenant}`);
});

test('a receiver without tenant is given neither parameters nor URL by an adapter', async () => {
  const seen: object[] = [];
  const webhooks = createWebhooks({ secret: SECRETS.acme! });
  const handle = webhooks.handle.bind(webhooks);
  webhooks.handle = (input) => {
    seen.push(input);
    return handle(input);
  };
  const served = await fetchServed(webHandler(webhooks), () => 'https://receiver.example/webhooks')();
  const body = JSON.stringify(createTestEvent('user.created'));
  expect(codeOf(await served.send('acme', body, SECRETS.acme!))).toBe(200);
  expect(Object.keys(seen[0]!).sort()).toEqual(['body', 'headers', 'method']);
});
