/**
 * service-webhooks/core is the root without MemoryStore, and its `createWebhooks` needs a store. The
 * root re-exports the core by its package name, so both give the same objects; a receiver built on the
 * core never reaches MemoryStore or lru-cache, which a bundler then leaves out (checked here with
 * esbuild on the sources, as the package tier checks it on the packed tarball).
 */

import * as root from 'service-webhooks';
import * as core from 'service-webhooks/core';
import { describe, expect, expectTypeOf, test } from 'vitest';
import { BROUGHT_STORE, bundledFiles, lambdaFunctionSource } from '../support/lambda-bundle.js';
import { repoPath } from '../support/paths.js';

const secret = 'whsec_core';

describe('service-webhooks/core', () => {
  test('the root gives everything of the core, the same objects, plus MemoryStore', () => {
    const fromRoot: Record<string, unknown> = { ...root };
    const fromCore: Record<string, unknown> = { ...core };
    expect(Object.keys(fromRoot).sort()).toEqual([...Object.keys(fromCore), 'MemoryStore'].sort());
    for (const [name, value] of Object.entries(fromCore)) {
      if (name !== 'createWebhooks') expect(fromRoot[name], name).toBe(value);
    }
    expect(root.createWebhooks).not.toBe(core.createWebhooks);
    expect('MemoryStore' in core).toBe(false);
  });

  test('its createWebhooks needs a store, and says where the default is', () => {
    const noStore = () => core.createWebhooks({ secret } as Parameters<typeof core.createWebhooks>[0]);
    expect(noStore).toThrow(core.ConfigurationError);
    expect(noStore).toThrow(
      "`store` is missing: `createWebhooks` from 'service-webhooks/core' needs one (RedisStore, DynamoDBStore, PostgresStore or your own). For the in-process MemoryStore, import `createWebhooks` from 'service-webhooks'.",
    );
    // A type error too: the option is required in its signature.
    // @ts-expect-error: `store` is missing
    expectTypeOf(core.createWebhooks).toBeCallableWith({ secret });
    expectTypeOf(root.createWebhooks).toBeCallableWith({ secret });
  });

  test('the root defaults the store to a MemoryStore, and passes a given store (or a bad one) on', async () => {
    const body = JSON.stringify({
      id: 'evt_1',
      type: 'user.created',
      created: Math.floor(Date.now() / 1000),
      data: {},
      livemode: false,
    });
    const headers = { 'x-service-signature': root.signPayload(body, secret) };
    const claimedBy = async (create: typeof core.createWebhooks) => {
      const store = new root.MemoryStore();
      const claimed: string[] = [];
      const webhooks = create({
        secret,
        namespace: '',
        store: {
          claim: (key, token, leaseMs) => {
            claimed.push(key);
            return store.claim(key, token, leaseMs);
          },
          complete: (key, token, ttlMs) => store.complete(key, token, ttlMs),
          release: (key, token) => store.release(key, token),
        },
      });
      webhooks.on('user.created', () => {});
      expect((await webhooks.handle({ body, headers })).status).toBe(200);
      return claimed;
    };
    expect(await claimedBy(root.createWebhooks)).toEqual(['evt_1']);
    expect(await claimedBy(core.createWebhooks)).toEqual(['evt_1']);

    // No store: a MemoryStore of the receiver's own, which remembers the event.
    const defaulted = root.createWebhooks({ secret });
    defaulted.on('user.created', () => {});
    expect((await defaulted.handle({ body, headers })).headers['x-webhook-duplicate']).toBeUndefined();
    expect((await defaulted.handle({ body, headers })).headers['x-webhook-duplicate']).toBe('true');

    expect(() => root.createWebhooks({ secret, store: null as never })).toThrow(/`claim` method is missing/);
    expect(() => root.createWebhooks(undefined as never)).toThrow(
      'createWebhooks needs an options object: createWebhooks({ secret }).',
    );
  });

  test('a Lambda function on the core and a brought store bundles without MemoryStore or lru-cache', async () => {
    const bundled = (from: string, store: string | undefined) =>
      bundledFiles(lambdaFunctionSource(from, store), repoPath('test'), repoPath('tsconfig.json'));
    const memoryStoreFiles = (inputs: string[]) =>
      inputs.filter((input) => /lru-cache|memory-store|lease-table/.test(input));

    expect(memoryStoreFiles(await bundled('service-webhooks/core', BROUGHT_STORE))).toEqual([]);
    // The control: from the root, the default store and its cache are in.
    const fromRoot = memoryStoreFiles(await bundled('service-webhooks', undefined));
    expect(fromRoot).toEqual(expect.arrayContaining(['src/memory-store.ts', 'src/lease-table.ts']));
    expect(fromRoot.some((input) => input.startsWith('lru-cache/'))).toBe(true);
  });
});
