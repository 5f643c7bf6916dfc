/**
 * The `tenant` option typed end to end: `ctx.tenant` is what `tenant.from` gives (a string for a
 * declared source, the function's return type for a function), `tenant.secret` takes that type, a
 * receiver without `tenant` has no `ctx.tenant`, and every adapter and every inbox worker takes both
 * kinds of receiver.
 */
import {
  type AnyWebhooks,
  createWebhooks,
  type HandlerContext,
  MemoryStore,
  type NoSchemas,
  type TenantHandlerContext,
  type Webhooks,
} from 'service-webhooks';
import type { startInboxWorker } from 'service-webhooks/bullmq';
import { createWebhooks as createWithStore } from 'service-webhooks/core';
import { expressWebhooks } from 'service-webhooks/express';
import { fastifyWebhooks } from 'service-webhooks/fastify';
import { lambdaHandler } from 'service-webhooks/lambda';
import type { startNatsWorker } from 'service-webhooks/nats';
import { nextRouteHandler } from 'service-webhooks/next';
import { nodeHandler } from 'service-webhooks/node';
import type { startPgBossWorker } from 'service-webhooks/pg-boss';
import type { startRabbitMQWorker } from 'service-webhooks/rabbitmq';
import type { sqsHandler, startSqsWorker } from 'service-webhooks/sqs';
import { webHandler } from 'service-webhooks/web';
import { describe, expectTypeOf, test } from 'vitest';
import { z } from 'zod';

type AccountId = `acct_${string}`;
const isAccount = (id: string | undefined): id is AccountId => id?.startsWith('acct_') === true;

describe('tenant types', () => {
  test('a declared source gives string tenants', () => {
    const webhooks = createWebhooks({
      tenant: { from: { param: 'account' }, secret: (tenant) => `whsec_${tenant}` },
    });
    expectTypeOf(webhooks).toEqualTypeOf<Webhooks<NoSchemas, string>>();
    webhooks.on('user.created', (_event, ctx) => {
      expectTypeOf(ctx).toEqualTypeOf<TenantHandlerContext<string>>();
      expectTypeOf(ctx.tenant).toEqualTypeOf<string>();
    });
  });

  test("a function source's return type is ctx.tenant's type and tenant.secret's parameter", () => {
    const webhooks = createWebhooks({
      tenant: {
        from: (request) => {
          const id = request.params?.account;
          return isAccount(id) ? id : undefined;
        },
        secret: async (tenant) => {
          expectTypeOf(tenant).toEqualTypeOf<AccountId>();
          return [`whsec_${tenant}`];
        },
      },
    });
    webhooks.on(['user.created', 'payment.*'], (_event, ctx) => {
      expectTypeOf(ctx.tenant).toEqualTypeOf<AccountId>();
    });
    webhooks.onAny((_event, ctx) => expectTypeOf(ctx.tenant).toEqualTypeOf<AccountId>());
    // The chain keeps the tenant type.
    webhooks
      .onError(() => {})
      .on('user.deleted', (_event, ctx) => expectTypeOf(ctx.tenant).toEqualTypeOf<AccountId>());
  });

  test("secret's parameter annotated by hand with from's type: the tenant is still from's return type", () => {
    const webhooks = createWebhooks({
      tenant: {
        from: (request) => {
          const id = request.params?.account;
          return isAccount(id) ? id : undefined;
        },
        secret: (account: AccountId) => `whsec_${account}`,
      },
    });
    expectTypeOf(webhooks).toEqualTypeOf<Webhooks<NoSchemas, AccountId>>();
    webhooks.on('user.created', (_event, ctx) => expectTypeOf(ctx.tenant).toEqualTypeOf<AccountId>());
    // Annotated `string` (wider than the tenant) is fine too, and changes nothing.
    const wide = createWebhooks({
      tenant: {
        from: async (request) => request.header('x-account') as AccountId | undefined,
        secret: async (account: string) => [`whsec_${account}`],
      },
    });
    expectTypeOf(wide).toEqualTypeOf<Webhooks<NoSchemas, AccountId>>();
  });

  test('an annotation narrower than what from gives does not compile: a declared source reads any string', () => {
    // @ts-expect-error a header is any string, not an AccountId
    createWebhooks({ tenant: { from: { header: 'x-account' }, secret: (id: AccountId) => id } });
    // @ts-expect-error the function may give any string, not an AccountId
    createWebhooks({ tenant: { from: (request) => request.header('x'), secret: (id: AccountId) => id } });
  });

  test('an async source, schemas and a store from the core subpath keep the types', () => {
    const schemas = { 'user.created': z.object({ id: z.string(), extra: z.number() }).loose() };
    const webhooks = createWithStore({
      store: new MemoryStore(),
      schemas,
      tenant: {
        from: async (request) => request.header('x-account') as AccountId | undefined,
        secret: () => 'x',
      },
    });
    webhooks.on('user.created', (event, ctx) => {
      expectTypeOf(event.extra).toEqualTypeOf<number>();
      expectTypeOf(ctx.tenant).toEqualTypeOf<AccountId>();
    });
  });

  test('a receiver without tenant has no ctx.tenant', () => {
    const webhooks = createWebhooks({ secret: 'whsec_one' });
    webhooks.on('user.created', (_event, ctx) => {
      expectTypeOf(ctx).toEqualTypeOf<HandlerContext>();
      // @ts-expect-error only a receiver with `tenant` has one
      ctx.tenant;
    });
  });

  test('secret and tenant together, or a tenant without secret do not compile; an inbox with tenant does', () => {
    // @ts-expect-error one or the other
    createWebhooks({ secret: 'x', tenant: { from: { param: 'a' }, secret: () => 'x' } });
    const inbox = { enqueue: async () => {} };
    const queued = createWebhooks({
      tenant: { from: (r) => r.header('x') as AccountId | undefined, secret: () => 'x' },
      inbox,
      inboxKey: 'k',
    });
    // A worker's run of a tenant's entry has the tenant, typed as the door read it.
    queued.on('user.created', (_event, ctx) => {
      expectTypeOf(ctx.tenant).toEqualTypeOf<AccountId>();
    });
    // @ts-expect-error each tenant's secret is needed
    createWebhooks({ tenant: { from: { param: 'a' } } });
    // @ts-expect-error not a source
    createWebhooks({ tenant: { from: { cookie: 'a' }, secret: () => 'x' } });
  });

  test('every adapter takes a receiver with tenant and one without', async () => {
    const receivers: AnyWebhooks[] = [
      createWebhooks({ secret: 'x' }),
      createWebhooks({ tenant: { from: { param: 'a' }, secret: () => 'x' } }),
      createWebhooks({ tenant: { from: (r) => r.header('x') as AccountId | undefined, secret: () => 'x' } }),
    ];
    for (const webhooks of receivers) {
      expressWebhooks(webhooks);
      lambdaHandler(webhooks);
      nextRouteHandler(webhooks);
      nodeHandler(webhooks);
      webHandler(webhooks);
      expectTypeOf(fastifyWebhooks).parameter(1).toMatchTypeOf<{ webhooks: typeof webhooks }>();
    }
  });

  test('every inbox worker takes a receiver with tenant and one without', () => {
    const tenants = createWebhooks({
      tenant: { from: { param: 'a' }, secret: () => 'x' },
      inbox: { enqueue: async () => {} },
    });
    const single = createWebhooks({ secret: 'x' });
    for (const webhooks of [tenants, single]) {
      expectTypeOf<typeof webhooks>().toMatchTypeOf<Parameters<typeof startInboxWorker>[0]>();
      expectTypeOf<typeof webhooks>().toMatchTypeOf<Parameters<typeof startPgBossWorker>[0]>();
      expectTypeOf<typeof webhooks>().toMatchTypeOf<Parameters<typeof startSqsWorker>[0]>();
      expectTypeOf<typeof webhooks>().toMatchTypeOf<Parameters<typeof sqsHandler>[0]>();
      expectTypeOf<typeof webhooks>().toMatchTypeOf<Parameters<typeof startRabbitMQWorker>[0]>();
      expectTypeOf<typeof webhooks>().toMatchTypeOf<Parameters<typeof startNatsWorker>[0]>();
    }
  });
});
