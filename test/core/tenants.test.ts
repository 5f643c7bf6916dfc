/**
 * One receiver, many registrations (`tenant`): the core reads the tenant from what the adapter passes
 * (route parameters, URL, headers), asks the tenant's `secret` function under the secret deadline with
 * a bounded cache, scopes every store key per tenant, and answers an unknown tenant 404 without
 * touching the store. The adapters' own idioms are tested with each framework (test/adapters/*tenants*).
 */
import {
  ConfigurationError,
  createWebhooks,
  MemoryStore,
  type NoSchemas,
  type SecretOption,
  signPayload,
  type TenantWebhooksOptions,
  type WebhookError,
  type WebhookResponse,
} from 'service-webhooks';
import { createTestEvent } from 'service-webhooks/testing';
import { describe, expect, test, vi } from 'vitest';
import { SpyStore } from './spy-store.js';

const SECRETS: Readonly<Record<string, readonly string[]>> = {
  acme: ['whsec_acme'],
  globex: ['whsec_globex_new', 'whsec_globex_old'],
  initech: ['whsec_initech'],
};

type Options = Partial<TenantWebhooksOptions<NoSchemas, string>>;

function setup(
  options: Options = {},
  secret: (tenant: string) => SecretOption | undefined | Promise<SecretOption | undefined> = vi.fn(
    (tenant: string) => SECRETS[tenant],
  ),
) {
  const store = new SpyStore();
  const errors: WebhookError[] = [];
  const webhooks = createWebhooks({
    store,
    ...options,
    tenant: { from: { param: 'account' }, secret, ...options.tenant },
  });
  const ran: string[] = [];
  webhooks.on('user.created', (event, ctx) => {
    ran.push(`${ctx.tenant} ${event.id}`);
  });
  webhooks.onError((error) => errors.push(error));
  return { webhooks, store, errors, ran, secret: vi.mocked(secret) };
}

function post(
  webhooks: { handle: ReturnType<typeof createWebhooks>['handle'] },
  account: string | undefined,
  body: string,
  signWith: string,
  extra: { url?: string; headers?: Record<string, string> } = {},
): Promise<WebhookResponse> {
  return webhooks.handle({
    body,
    headers: { 'x-service-signature': signPayload(body, signWith), ...extra.headers },
    method: 'POST',
    ...(account === undefined ? {} : { params: { account } }),
    ...(extra.url === undefined ? {} : { url: extra.url }),
  });
}

const codeOf = (response: WebhookResponse) =>
  response.status === 200 ? 200 : `${response.status} ${JSON.parse(response.body).error.code}`;

describe('tenants on one route', () => {
  test('three tenants with their own secrets (one rotating) are each verified and handled; ctx.tenant names them', async () => {
    const { webhooks, ran } = setup();
    for (const [tenant, secrets] of Object.entries(SECRETS)) {
      for (const secret of secrets) {
        const event = createTestEvent('user.created');
        expect(codeOf(await post(webhooks, tenant, JSON.stringify(event), secret))).toBe(200);
        expect(ran.at(-1)).toBe(`${tenant} ${event.id}`);
      }
    }
    expect(ran).toHaveLength(4);
  });

  test('a body signed for one tenant and replayed to another tenant is 401 invalid_signature', async () => {
    const { webhooks, ran, store } = setup();
    const body = JSON.stringify(createTestEvent('user.created'));
    expect(codeOf(await post(webhooks, 'globex', body, 'whsec_acme'))).toBe('401 invalid_signature');
    expect(ran).toEqual([]);
    expect(store.calls).toEqual([]);
  });

  test('the same event id under two tenants is two events; under one tenant, a duplicate', async () => {
    const { webhooks, ran, store } = setup();
    const event = createTestEvent('user.created');
    const body = JSON.stringify(event);
    expect(codeOf(await post(webhooks, 'acme', body, 'whsec_acme'))).toBe(200);
    expect(codeOf(await post(webhooks, 'initech', body, 'whsec_initech'))).toBe(200);
    const again = await post(webhooks, 'acme', body, 'whsec_acme');
    expect(again.headers['x-webhook-duplicate']).toBe('true');
    expect(ran).toEqual([`acme ${event.id}`, `initech ${event.id}`]);
    const claimed = store.calls.filter((call) => call.startsWith('claim ')).map((call) => call.slice(6));
    expect(claimed[0]).toMatch(/^#[0-9a-f]{16}:@acme:evt_/);
    expect(claimed[1]).toMatch(/^#[0-9a-f]{16}:@initech:evt_/);
  });

  test('tenants that share a secret (and a namespace) still keep their events apart', async () => {
    const { webhooks, ran, store } = setup(
      { namespace: 'platform' },
      vi.fn(() => 'whsec_shared'),
    );
    const body = JSON.stringify(createTestEvent('user.created'));
    expect(codeOf(await post(webhooks, 'a:b', body, 'whsec_shared'))).toBe(200);
    expect(codeOf(await post(webhooks, 'a', body, 'whsec_shared'))).toBe(200);
    expect(ran).toHaveLength(2);
    const claimed = store.calls.filter((call) => call.startsWith('claim ')).map((call) => call.slice(6));
    expect(claimed.map((key) => key.split(':evt_')[0])).toEqual(['platform:@a%3Ab', 'platform:@a']);
  });

  test('an unknown tenant is 404 unknown_tenant: no store call, no handler, onError told, and kept for unknownTtlSeconds', async () => {
    const { webhooks, store, ran, errors, secret } = setup();
    const body = JSON.stringify(createTestEvent('user.created'));
    for (let i = 0; i < 3; i++) {
      const answer = await post(webhooks, 'hooli', body, 'whsec_anything');
      expect(codeOf(answer)).toBe('404 unknown_tenant');
      expect(JSON.parse(answer.body).error.message).toBe(
        'This receiver serves no webhook registration at this address.',
      );
    }
    expect(store.calls).toEqual([]);
    expect(ran).toEqual([]);
    expect(secret.mock.calls.filter(([tenant]) => tenant === 'hooli')).toHaveLength(1);
    expect(errors.map((error) => [error.code, (error as WebhookError & { tenant?: string }).tenant])).toEqual(
      [
        ['unknown_tenant', 'hooli'],
        ['unknown_tenant', 'hooli'],
        ['unknown_tenant', 'hooli'],
      ],
    );
  });

  test('no tenant in the request, an empty one, or one too long to key: 404 before any secret is asked', async () => {
    const { webhooks, secret, errors } = setup();
    const body = JSON.stringify(createTestEvent('user.created'));
    expect(codeOf(await post(webhooks, undefined, body, 'whsec_acme'))).toBe('404 unknown_tenant');
    expect(codeOf(await post(webhooks, '', body, 'whsec_acme'))).toBe('404 unknown_tenant');
    expect(codeOf(await post(webhooks, 'x'.repeat(129), body, 'whsec_acme'))).toBe('404 unknown_tenant');
    expect(secret).not.toHaveBeenCalled();
    expect(errors[0]?.message).toContain('this adapter passed no route parameters');
  });

  test('secrets are cached per tenant for cacheTtlSeconds; concurrent first deliveries share one call', async () => {
    const secret = vi.fn(async (tenant: string) => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      return SECRETS[tenant];
    });
    const { webhooks } = setup(
      { tenant: { from: { param: 'account' }, secret, cacheTtlSeconds: 1 } },
      secret,
    );
    const send = () => post(webhooks, 'acme', JSON.stringify(createTestEvent('user.created')), 'whsec_acme');
    expect((await Promise.all([send(), send(), send()])).map(codeOf)).toEqual([200, 200, 200]);
    expect(codeOf(await send())).toBe(200);
    expect(secret).toHaveBeenCalledTimes(1);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(codeOf(await send())).toBe(200);
    expect(secret).toHaveBeenCalledTimes(2);
  });

  test('a rotation is seen once the cache expires: the new secret verifies, the removed one is refused', async () => {
    let current: string[] = ['whsec_v1'];
    const secret = vi.fn(() => current);
    const { webhooks } = setup(
      { tenant: { from: { param: 'account' }, secret, cacheTtlSeconds: 1 } },
      secret,
    );
    const body = () => JSON.stringify(createTestEvent('user.created'));
    expect(codeOf(await post(webhooks, 'acme', body(), 'whsec_v1'))).toBe(200);
    current = ['whsec_v2'];
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(codeOf(await post(webhooks, 'acme', body(), 'whsec_v2'))).toBe(200);
    expect(codeOf(await post(webhooks, 'acme', body(), 'whsec_v1'))).toBe('401 invalid_signature');
  });

  test('the cache holds at most maxTenants known tenants, the least recently used going first', async () => {
    const secret = vi.fn((tenant: string) => `whsec_${tenant}`);
    const { webhooks } = setup({ tenant: { from: { param: 'account' }, secret, maxTenants: 2 } }, secret);
    const send = (tenant: string) =>
      post(webhooks, tenant, JSON.stringify(createTestEvent('user.created')), `whsec_${tenant}`);
    for (const tenant of ['a', 'b', 'a', 'c', 'a', 'b']) expect(codeOf(await send(tenant))).toBe(200);
    // a, b (asked), a (cached), c (asked; b, least recently used, goes), a (cached), b (asked again).
    expect(secret.mock.calls.map(([tenant]) => tenant)).toEqual(['a', 'b', 'c', 'b']);
  });

  test('a secret function that throws, rejects, gives a blank secret, or hangs is 503 secret_unavailable in time, and is not cached', async () => {
    let mode: 'throw' | 'reject' | 'blank' | 'hang' | 'ok' = 'throw';
    const secret = vi.fn((tenant: string) => {
      if (mode === 'throw') throw new Error('vault sealed');
      if (mode === 'reject') return Promise.reject(new Error('vault down'));
      if (mode === 'blank') return ' ';
      if (mode === 'hang') return new Promise<undefined>(() => {});
      return SECRETS[tenant];
    });
    const { webhooks, errors, store } = setup({ storeTimeoutMs: 200 }, secret);
    const body = () => JSON.stringify(createTestEvent('user.created'));
    for (const next of ['throw', 'reject', 'blank', 'hang'] as const) {
      mode = next;
      const started = Date.now();
      const answer = await post(webhooks, 'acme', body(), 'whsec_acme');
      expect(codeOf(answer)).toBe('503 secret_unavailable');
      expect(answer.headers['retry-after']).toBe('60');
      // Within the deadline and a generous margin for a loaded machine, far from the sender's 30 s.
      expect(Date.now() - started).toBeLessThan(10_000);
    }
    expect(store.calls).toEqual([]);
    expect(errors.map((error) => error.code)).toEqual(Array(4).fill('secret_unavailable'));
    expect(errors[0]?.message).toContain('vault sealed');
    mode = 'ok';
    expect(codeOf(await post(webhooks, 'acme', body(), 'whsec_acme'))).toBe(200);
  });

  test('a tenant reader that throws or hangs is 503 secret_unavailable within the deadline', async () => {
    let hang = false;
    const from = () => {
      if (hang) return new Promise<string>(() => {});
      throw new Error('no route table');
    };
    const webhooks = createWebhooks({
      store: new MemoryStore(),
      storeTimeoutMs: 200,
      tenant: { from, secret: () => 'whsec_x' },
    });
    const errors: WebhookError[] = [];
    webhooks.onError((error) => errors.push(error));
    const body = JSON.stringify(createTestEvent('user.created'));
    expect(codeOf(await post(webhooks, 'acme', body, 'whsec_x'))).toBe('503 secret_unavailable');
    hang = true;
    expect(codeOf(await post(webhooks, 'acme', body, 'whsec_x'))).toBe('503 secret_unavailable');
    expect(errors.map((error) => error.message)).toEqual([
      '`tenant.from` did not give a usable secret: no route table.',
      '`tenant.from` did not give a usable secret: `tenant.from` did not answer within 200 ms.',
    ]);
  });

  test('every source: path pattern, header, query, host', async () => {
    const cases: [
      TenantWebhooksOptions<NoSchemas, string>['tenant']['from'],
      { url?: string; headers?: Record<string, string> },
    ][] = [
      [{ path: '/hooks/:account/in' }, { url: '/hooks/acme/in?x=1' }],
      [{ path: '/hooks/:account' }, { url: 'https://receiver.example/hooks/acme' }],
      [{ header: 'X-Account' }, { headers: { 'x-account': 'acme' } }],
      [{ query: 'account' }, { url: '/hooks?account=acme' }],
      [{ host: 'subdomain' }, { headers: { host: 'acme.hooks.example.com:8443' } }],
      [{ host: 'hostname' }, { headers: { host: 'ACME:443' } }],
    ];
    for (const [from, extra] of cases) {
      const { webhooks, ran } = setup({ tenant: { from, secret: (tenant) => SECRETS[tenant] } });
      const answer = await post(
        webhooks,
        undefined,
        JSON.stringify(createTestEvent('user.created')),
        'whsec_acme',
        extra,
      );
      expect([from, codeOf(answer), ran[0]?.split(' ')[0]]).toEqual([from, 200, 'acme']);
    }
    const { webhooks } = setup({ tenant: { from: { path: '/hooks/:account' }, secret: (t) => SECRETS[t] } });
    const body = JSON.stringify(createTestEvent('user.created'));
    for (const url of ['/hooks/acme/extra', '/other/acme', '/hooks/%E0%A4%A'])
      expect(codeOf(await post(webhooks, undefined, body, 'whsec_acme', { url }))).toBe('404 unknown_tenant');
  });

  test('options are checked: both secret and tenant, a bad source, a bad ttl (an inbox is taken)', () => {
    const secret = () => 'whsec_x';
    const make = (options: object) => () => createWebhooks(options as never);
    expect(make({ secret: 'whsec_x', tenant: { from: { param: 'a' }, secret } })).toThrow(ConfigurationError);
    expect(
      make({ tenant: { from: { param: 'a' }, secret }, inbox: { enqueue: async () => {} } }),
    ).not.toThrow();
    expect(make({ tenant: { from: { cookie: 'a' }, secret } })).toThrow(/tenant.from/);
    expect(make({ tenant: { from: { path: '/hooks/static' }, secret } })).toThrow(/`:name` segment/);
    expect(make({ tenant: { from: { param: 'a' }, secret, cacheTtlSeconds: 0 } })).toThrow(/cacheTtlSeconds/);
    expect(make({ tenant: { from: { param: 'a' }, secret, unknownTtlSeconds: -1 } })).toThrow(
      /unknownTtlSeconds/,
    );
    expect(make({ tenant: { from: { param: 'a' } } })).toThrow(/`secret`/);
  });

  test('verifyAndParse needs a receiver of one registration', async () => {
    const { webhooks } = setup();
    await expect(webhooks.verifyAndParse('{}', 'sha256=00')).rejects.toBeInstanceOf(ConfigurationError);
  });
});
