/**
 * DynamoDBStore when DynamoDB is down or hangs, measured. The endpoint is dynalite (an implementation of
 * the DynamoDB API that runs on this machine, not AWS) behind a TCP proxy of the test's own, which
 * forwards, refuses connections (nothing listening: down) or accepts them and never answers (slow).
 * Two client configurations are compared: the docs' fail-fast one (maxAttempts 1, a 1 s request
 * timeout that throws) and the SDK's defaults (3 attempts, no timeout), which only the core's
 * storeTimeoutMs bounds. Every case prints what it measured.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  createWebhooks,
  DEFAULTS,
  StoreUnavailableError,
  type WebhookError,
  type WebhookResponse,
} from 'service-webhooks';
import { DynamoDBStore } from 'service-webhooks/dynamodb';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { clientFor, FAIL_FAST, type RunningDynalite, startDynalite, uniqueTableName } from './dynalite.js';

const SECRET = 'whsec_dynamodb_faults';
const STORE_TIMEOUT_MS = DEFAULTS.storeTimeoutMs;
/** Room for scheduling on a busy 2-core machine; the bound proven is "within storeTimeoutMs". */
const MARGIN_MS = 500;

type Mode = 'forward' | 'down' | 'slow';

/** A TCP proxy to `target` whose behaviour the test switches. */
class FaultyProxy {
  mode: Mode = 'forward';
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  port = 0;

  constructor(readonly target: number) {}

  async start(): Promise<void> {
    const server = createServer((socket) => {
      this.#track(socket);
      const upstream = connect(this.target, '127.0.0.1');
      this.#track(upstream);
      // Forwarded by hand, so that switching to 'slow' silences open (kept-alive) connections too.
      socket.on('data', (chunk) => {
        if (this.mode === 'forward') upstream.write(chunk);
      });
      upstream.on('data', (chunk) => {
        if (this.mode === 'forward') socket.write(chunk);
      });
      const end = () => {
        socket.destroy();
        upstream.destroy();
      };
      for (const side of [socket, upstream]) {
        side.once('close', end);
        side.on('error', end);
      }
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as { port: number }).port;
    this.#server = server;
  }

  /** Switch. 'down' also drops open connections, as a dead host's peer would end up doing. */
  async set(mode: Mode): Promise<void> {
    this.mode = mode;
    if (mode === 'down' && this.#server) {
      this.#dropConnections();
      const server = this.#server;
      this.#server = undefined;
      await new Promise((resolve) => server.close(resolve));
    } else if (mode !== 'down' && !this.#server) {
      await this.start();
    }
  }

  async stop(): Promise<void> {
    this.#dropConnections();
    const server = this.#server;
    this.#server = undefined;
    if (server) await new Promise((resolve) => server.close(resolve));
  }

  #track(socket: Socket): void {
    this.#sockets.add(socket);
    socket.once('close', () => this.#sockets.delete(socket));
  }

  #dropConnections(): void {
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
  }
}

const figures: string[] = [];
const record = (line: string) => {
  figures.push(line);
  console.log(line);
};

const tableName = uniqueTableName('faults');
let dynalite: RunningDynalite;
let proxy: FaultyProxy;
let clients: { name: string; client: DynamoDBClient }[] = [];

function receiver(client: DynamoDBClient) {
  const runs: string[] = [];
  const errors: WebhookError[] = [];
  const webhooks = createWebhooks({
    secret: SECRET,
    store: new DynamoDBStore({ client, tableName }),
    storeTimeoutMs: STORE_TIMEOUT_MS,
  });
  webhooks.onAny((event) => {
    runs.push(event.id);
  });
  webhooks.onError((error) => {
    errors.push(error);
  });
  return {
    runs,
    errors,
    async send(): Promise<{ response: WebhookResponse; ms: number; code: string | undefined }> {
      const started = performance.now();
      const response = await deliver(webhooks, createTestEvent('user.created'), { secret: SECRET });
      const ms = Math.round(performance.now() - started);
      const code =
        response.status >= 400
          ? (JSON.parse(response.body) as { error: { code: string } }).error.code
          : undefined;
      return { response, ms, code };
    },
  };
}

/** The store's own error under the core's StoreUnavailableError: what the SDK (or the deadline) said. */
function rootCause(error: WebhookError | undefined): string {
  const store = error?.cause;
  if (store instanceof StoreUnavailableError) {
    const sdk = store.cause as (Error & { code?: string }) | undefined;
    return `DynamoDBStore: ${sdk?.name}${sdk?.code ? ` ${sdk.code}` : ''}`;
  }
  return `core: ${(store as Error | undefined)?.name}`;
}

beforeAll(async () => {
  dynalite = await startDynalite();
  proxy = new FaultyProxy(Number(new URL(dynalite.endpoint).port));
  await proxy.start();
  const endpoint = `http://127.0.0.1:${proxy.port}`;
  clients = [
    { name: 'fail-fast client', client: clientFor(endpoint, FAIL_FAST) },
    { name: 'SDK defaults', client: clientFor(endpoint, {}) },
  ];
  await new DynamoDBStore({ client: clients[0]!.client, tableName }).createTable({ timeToLive: false });
});

afterAll(async () => {
  for (const { client } of clients) client.destroy();
  await proxy?.stop();
  await dynalite?.stop();
  console.log(`\nDynamoDBStore fault timings (storeTimeoutMs ${STORE_TIMEOUT_MS}):\n${figures.join('\n')}`);
});

beforeEach(async () => {
  await proxy.set('forward');
});

describe('DynamoDBStore when DynamoDB fails', () => {
  for (const mode of ['down', 'slow'] as const) {
    const what =
      mode === 'down' ? 'endpoint down (nothing listening)' : 'endpoint slow (accepts, never answers)';
    test(`${what}: 503 store_unavailable within storeTimeoutMs, handler not run; handled again once it is back`, async () => {
      for (const { name, client } of clients) {
        const subject = receiver(client);
        expect((await subject.send()).response.status).toBe(200); // warm: connections open

        await proxy.set(mode);
        // Two deliveries: the first may meet a kept-alive socket the endpoint just dropped; the
        // second finds nothing listening (down) or another silent connection (slow).
        const attempts = [await subject.send(), await subject.send()];
        const causes: string[] = [];
        for (const [i, failed] of attempts.entries()) {
          expect(failed.response.status).toBe(503);
          expect(failed.code).toBe('store_unavailable');
          expect(failed.response.headers['retry-after']).toBeDefined();
          expect(failed.ms).toBeLessThan(STORE_TIMEOUT_MS + MARGIN_MS);
          expect(subject.errors[i]).toBeInstanceOf(StoreUnavailableError);
          causes.push(rootCause(subject.errors[i]));
          if (name === 'fail-fast client') {
            // The SDK's own error, not the core's deadline: the client gave up first.
            expect(causes[i]).toMatch(/^DynamoDBStore: /);
            if (mode === 'slow') expect(failed.ms).toBeLessThan(1_000 + MARGIN_MS);
          }
        }
        expect(subject.runs).toHaveLength(1);

        await proxy.set('forward');
        const back = await subject.send();
        expect(back.response.status, back.response.body + rootCause(subject.errors.at(-1))).toBe(200);
        expect(subject.runs).toHaveLength(2);
        record(
          `${what}, ${name}: ${attempts.map((a, i) => `${a.response.status} ${a.code} in ${a.ms} ms (${causes[i]})`).join(', then ')}; handler runs 0; back up: ${back.response.status} in ${back.ms} ms`,
        );
      }
    }, 30_000);
  }
});
