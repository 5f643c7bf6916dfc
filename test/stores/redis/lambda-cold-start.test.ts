/**
 * RedisStore and a client's first connection (issue 22, item 4). With the docs' fail-fast options
 * (`enableOfflineQueue: false`), a command sent before the client is ready fails at once; on Lambda the
 * client is created in the init phase and the first invocation arrives a moment later, so every cold
 * start answered its first delivery 503. The store now waits for the first connection (bounded), and
 * only for it: once the client has been ready, an outage still fails fast. Prints what it measured.
 */
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { Redis } from 'ioredis';
import {
  createWebhooks,
  DEFAULTS,
  SIGNATURE_HEADER,
  StoreUnavailableError,
  signPayload,
  type WebhookResponse,
} from 'service-webhooks';
import { RedisStore } from 'service-webhooks/redis';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { functionUrlEvent } from '../../adapters/fixtures/lambda-events.js';
import { ROOT } from '../../support/paths.js';
import { spawnProcess } from '../../support/process.js';
import {
  type ClusterRedis,
  type StandaloneRedis,
  startCluster,
  startStandalone,
} from '../../support/redis-servers.js';
import { sleep } from '../../support/sleep.js';
import { TcpProxy } from './fixtures/tcp-proxy.js';

const SECRET = 'whsec_lambda_cold_start';
const STORE_TIMEOUT_MS = DEFAULTS.storeTimeoutMs;
/** Room for scheduling on a busy 2-core machine. */
const MARGIN_MS = 500;
/** What "fails fast" means here: well under the store's 1 s wait for a first connection. */
const FAST_MS = 250;
/** What the docs recommend. */
const FAIL_FAST = { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 1_000 } as const;

const COLD_START = fileURLToPath(new URL('./fixtures/lambda-cold-start.ts', import.meta.url));

const figures: string[] = [];
const record = (line: string) => {
  figures.push(line);
  console.log(line);
};

let standalone: StandaloneRedis;
let cluster: ClusterRedis;

beforeAll(async () => {
  [standalone, cluster] = await Promise.all([startStandalone(), startCluster()]);
});

afterAll(async () => {
  await Promise.all([standalone?.stop(), cluster?.stop()]);
  console.log(`\nFirst-connection timings (storeTimeoutMs ${STORE_TIMEOUT_MS}):\n${figures.join('\n')}`);
});

/** A signed user.created delivery as a Function URL (payload 2.0) event, the shape of the adapter tests. */
function httpApiEvent(): APIGatewayProxyEventV2 {
  const body = new TextEncoder().encode(JSON.stringify(createTestEvent('user.created')));
  return functionUrlEvent({
    method: 'POST',
    headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signPayload(body, SECRET) },
    body,
    base64: false,
  });
}

interface ColdStart {
  clientStatus: string;
  status: number;
  body: string;
  ms: number;
  runs: number;
}

/** A fresh process loads the Lambda function (test/stores/redis/fixtures) and invokes it at once. */
async function coldStart(env: { REDIS_URL?: string; REDIS_CLUSTER_NODES?: string }): Promise<ColdStart> {
  const child = spawnProcess(process.execPath, ['--import', 'tsx', COLD_START], {
    name: 'cold start',
    cwd: ROOT,
    env: { ...env, WEBHOOK_SECRET: SECRET, LAMBDA_EVENT: JSON.stringify(httpApiEvent()) },
  });
  const code = await child.exited;
  if (code === 0) return JSON.parse(child.output()) as ColdStart;
  throw new Error(`The cold start exited with ${code}:\n${child.stderr()}`);
}

/** A port nothing listens on: connections to it are refused at once. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return address.port;
}

function receiver(client: Redis) {
  const runs: string[] = [];
  const webhooks = createWebhooks({ secret: SECRET, store: new RedisStore({ client }) });
  webhooks.on('user.created', (event) => {
    runs.push(event.id);
  });
  webhooks.onError(() => {});
  return {
    runs,
    async send(): Promise<{ response: WebhookResponse; ms: number; code?: string }> {
      const started = performance.now();
      const response = await deliver(webhooks, createTestEvent('user.created'), { secret: SECRET });
      const ms = Math.round(performance.now() - started);
      if (response.status < 400) return { response, ms };
      return { response, ms, code: (JSON.parse(response.body) as { error: { code: string } }).error.code };
    },
  };
}

/** The standalone Redis, for the proxy to forward to. */
function target(): { host: string; port: number } {
  const url = new URL(standalone.url);
  return { host: url.hostname, port: Number(url.port || 6379) };
}

/**
 * The `ready`, `close` and `end` listeners left on a client once it is closed: ioredis's own for a
 * connection attempt are gone by then, so any left would be the store's.
 */
async function listenersLeft(client: Redis): Promise<number[]> {
  client.disconnect();
  while (client.status !== 'end') await sleep(5);
  await sleep(5);
  return (['ready', 'close', 'end'] as const).map((name) => client.listenerCount(name));
}

describe("RedisStore on a Lambda cold start (the docs' options)", () => {
  test('the first delivery, made while the new client is still connecting, is handled: 200, handler run once', async () => {
    const result = await coldStart({ REDIS_URL: standalone.url });
    expect(result.clientStatus).toBe('connecting');
    expect(result.status).toBe(200);
    expect(result.runs).toBe(1);
    record(
      `cold start, standalone: client ${result.clientStatus} at the delivery, ${result.status} in ${result.ms} ms`,
    );
  });

  test('the same with a Cluster client: 200, handler run once', async () => {
    const nodes = cluster.nodes.map(({ host, port }) => `${host}:${port}`).join(',');
    const result = await coldStart({ REDIS_CLUSTER_NODES: nodes });
    expect(['connecting', 'connect']).toContain(result.clientStatus);
    expect(result.status).toBe(200);
    expect(result.runs).toBe(1);
    record(
      `cold start, Cluster: client ${result.clientStatus} at the delivery, ${result.status} in ${result.ms} ms`,
    );
  });

  test('Redis down at cold start: 503 store_unavailable within storeTimeoutMs, handler not run', async () => {
    const result = await coldStart({ REDIS_URL: `redis://127.0.0.1:${await closedPort()}` });
    expect(result.status).toBe(503);
    expect((JSON.parse(result.body) as { error: { code: string } }).error.code).toBe('store_unavailable');
    expect(result.ms).toBeLessThan(STORE_TIMEOUT_MS + MARGIN_MS);
    expect(result.runs).toBe(0);
    record(`cold start, Redis down (refused): ${result.status} in ${result.ms} ms`);
  });
});

describe('RedisStore waits for the first connection only', () => {
  test('a lazyConnect client is connected by the first call, which waits for it: 200', async () => {
    const client = new Redis(standalone.url, { ...FAIL_FAST, lazyConnect: true });
    try {
      const app = receiver(client);
      expect(client.status).toBe('wait');
      const first = await app.send();
      expect(first.response.status).toBe(200);
      expect(app.runs).toHaveLength(1);
      expect(client.status).toBe('ready');
      // The wait's listeners are gone: the application's client is left as it was.
      expect(await listenersLeft(client)).toEqual([0, 0, 0]);
      record(`lazyConnect client: first delivery ${first.response.status} in ${first.ms} ms`);
    } finally {
      client.disconnect();
    }
  });

  test('a Redis that accepts but never answers at cold start: 503 within storeTimeoutMs, then fail fast', async () => {
    const proxy = await TcpProxy.start(target());
    proxy.mode = 'hang';
    const client = new Redis(proxy.url, FAIL_FAST);
    client.on('error', () => {});
    try {
      const app = receiver(client);
      const first = await app.send();
      expect(first.code).toBe('store_unavailable');
      expect(first.ms).toBeLessThan(STORE_TIMEOUT_MS + MARGIN_MS);
      // The first connection was given up on: the store never waits again, whatever the client does.
      const second = await app.send();
      expect(second.code).toBe('store_unavailable');
      expect(second.ms).toBeLessThan(FAST_MS);
      expect(app.runs).toHaveLength(0);
      expect(await listenersLeft(client)).toEqual([0, 0, 0]);
      record(`hung Redis at cold start: first ${first.code} in ${first.ms} ms, next in ${second.ms} ms`);
    } finally {
      client.disconnect();
      await proxy.close();
    }
  });

  test('an outage after the client was ready fails fast as before, also while it reconnects', async () => {
    const proxy = await TcpProxy.start(target());
    const client = new Redis(proxy.url, FAIL_FAST);
    client.on('error', () => {});
    try {
      const app = receiver(client);
      expect((await app.send()).response.status).toBe(200);
      // Redis stops answering: the connection drops and every reconnection hangs in its handshake.
      proxy.mode = 'hang';
      proxy.cut();
      while (client.status === 'ready') await sleep(1);
      const seen: string[] = [];
      for (const wanted of ['reconnecting', 'connect']) {
        const deadline = performance.now() + 5_000;
        while (client.status !== wanted) {
          if (performance.now() > deadline) throw new Error(`client never reached ${wanted}`);
          await sleep(1);
        }
        const result = await app.send();
        seen.push(`${wanted}: ${result.code} in ${result.ms} ms`);
        expect(result.code).toBe('store_unavailable');
        expect(result.ms).toBeLessThan(FAST_MS);
      }
      expect(app.runs).toHaveLength(1);
      record(`outage after ready, client ${seen.join(', ')}`);
    } finally {
      client.disconnect();
      await proxy.close();
    }
  });

  test('a lazyConnect client whose Redis is unreachable: the first call fails as StoreUnavailableError, with a cause', async () => {
    const client = new Redis({ port: await closedPort(), lazyConnect: true, ...FAIL_FAST });
    client.on('error', () => {});
    try {
      const store = new RedisStore({ client });
      const failure = await store.claim('evt_unreachable', 'token', 1_000).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(StoreUnavailableError);
      expect((failure as StoreUnavailableError).cause).toBeInstanceOf(Error);
      expect((failure as StoreUnavailableError).message).toMatch(/could not connect/);
    } finally {
      client.disconnect();
    }
  });

  test('refuses a readyTimeoutMs that is not a positive number', () => {
    const client = new Redis({ lazyConnect: true });
    for (const readyTimeoutMs of [0, -1, Number.NaN, '1000' as never]) {
      expect(() => new RedisStore({ client, readyTimeoutMs })).toThrow(/readyTimeoutMs/);
    }
  });
});
