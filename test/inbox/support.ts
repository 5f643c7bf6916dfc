/** What the inbox tests share: a door over real HTTP, signed deliveries, and worker processes. */
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import {
  type AnyWebhookEvent,
  createWebhooks,
  type WebhookError,
  type WebhookEvent,
  type Webhooks,
  type WebhooksOptions,
} from 'service-webhooks';
import { type BullmqInbox, bullmqInbox, inboxAdmin, startInboxWorker } from 'service-webhooks/bullmq';
import { nodeHandler } from 'service-webhooks/node';
import { RedisStore } from 'service-webhooks/redis';
import { signPayload } from 'service-webhooks/testing';
import type { LoggedRun } from '../support/crash-window.js';
import { ROOT } from '../support/paths.js';
import { type SpawnedProcess, startProcess } from '../support/process.js';
import { RedisServer } from '../support/redis-servers.js';
import { runsByEvent } from '../support/sigkill-run.js';

export const SECRET = 'whsec_inbox_tests';
const WORKER = fileURLToPath(new URL('./fixtures/worker.ts', import.meta.url));

/** A unique name per test run, for queues and key prefixes in a shared Redis. */
export function uniqueName(label: string): string {
  return `${label}-${crypto.randomUUID().slice(0, 8)}`;
}

/** An ioredis client that fails fast, as the door's store and queue should have. */
export function failFastClient(url: string): Redis {
  const client = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 1_000,
  });
  client.on('error', () => {});
  return client;
}

export interface Door {
  readonly url: string;
  readonly webhooks: Webhooks;
  readonly inbox: BullmqInbox;
  /** What the door reported to onError. */
  readonly errors: WebhookError[];
  close(): Promise<void>;
}

/** A receiver in inbox mode behind node:http, on a RedisStore and a BullMQ inbox. */
export async function startDoor(options: {
  readonly redisUrl: string;
  readonly queueName: string;
  readonly storePrefix: string;
  /** The queue's Redis when it is not the store's (to take one down without the other). */
  readonly queueRedisUrl?: string;
  readonly receiver?: Partial<WebhooksOptions>;
}): Promise<Door> {
  const storeClient = failFastClient(options.redisUrl);
  const inbox = bullmqInbox({
    connection: options.queueRedisUrl ?? options.redisUrl,
    queueName: options.queueName,
  });
  const webhooks = createWebhooks({
    secret: SECRET,
    store: new RedisStore({ client: storeClient, prefix: options.storePrefix }),
    inbox,
    ...options.receiver,
  });
  const errors: WebhookError[] = [];
  webhooks.onError((error) => {
    errors.push(error);
  });
  const server = createServer(nodeHandler(webhooks));
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    webhooks,
    inbox,
    errors,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await inbox.close();
      storeClient.disconnect();
    },
  };
}

/**
 * An in-process BullMQ worker on the door's queue: one attempt (a failure is dead-lettered at once),
 * no monitor, and a receiver that runs `handler` for every event on a RedisStore under the door's
 * `storePrefix`, reporting nothing. What the inbox CLI's and dashboard's tests dead-letter with.
 */
export async function startOneAttemptWorker(options: {
  readonly redisUrl: string;
  readonly queueName: string;
  readonly storePrefix: string;
  readonly handler: (event: AnyWebhookEvent) => void;
}): Promise<{ close(): Promise<void> }> {
  const storeClient = failFastClient(options.redisUrl);
  const webhooks = createWebhooks({
    secret: SECRET,
    store: new RedisStore({ client: storeClient, prefix: options.storePrefix }),
  });
  webhooks.onError(() => {});
  webhooks.onAny(options.handler);
  const worker = startInboxWorker(webhooks, {
    connection: options.redisUrl,
    queueName: options.queueName,
    attempts: 1,
    monitor: false,
  });
  await worker.waitUntilReady();
  return {
    async close() {
      await worker.close();
      storeClient.disconnect();
    },
  };
}

/**
 * A BullMQ inbox that dead-letters each event `handler` refuses, on a Redis of its own: the door, a
 * {@link startOneAttemptWorker} and the admin that the dev server's inbox panel and MCP tools read.
 * `close()` stops them, the door last, then the Redis.
 */
export async function startDeadLetteringInbox(
  label: string,
  handler: (event: AnyWebhookEvent) => void,
): Promise<{ readonly door: Door; readonly admin: ReturnType<typeof inboxAdmin>; close(): Promise<void> }> {
  const redis = await RedisServer.start();
  const queueName = uniqueName(label);
  const storePrefix = `${queueName}:store:`;
  const door = await startDoor({ redisUrl: redis.url, queueName, storePrefix });
  const worker = await startOneAttemptWorker({ redisUrl: redis.url, queueName, storePrefix, handler });
  const admin = inboxAdmin({ connection: redis.url, queueName });
  return {
    door,
    admin,
    async close() {
      await admin.close();
      await worker.close();
      await door.close();
      await redis.destroy();
    },
  };
}

export interface Answer {
  readonly status: number;
  readonly duplicate: boolean;
  readonly body: string;
  /** From the request's start to the end of the answer. */
  readonly ms: number;
}

const agent = new Agent({ keepAlive: true, maxSockets: 256 });

/** POST `event` signed with SECRET (or `body` as it is) over a keep-alive connection. */
export function deliver(
  url: string,
  event: AnyWebhookEvent | WebhookEvent | { readonly body: string },
): Promise<Answer> {
  const body = 'body' in event ? event.body : JSON.stringify(event);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const sent = request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'x-service-signature': signPayload(body, SECRET),
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            duplicate: response.headers['x-webhook-duplicate'] === 'true',
            body: Buffer.concat(chunks).toString('utf8'),
            ms: performance.now() - started,
          }),
        );
        response.on('error', reject);
      },
    );
    sent.on('error', reject);
    sent.end(body);
  });
}

export interface WorkerEnv {
  REDIS_URL: string;
  QUEUE: string;
  STORE_PREFIX: string;
  LOG_KEY: string;
  LEASE_SECONDS?: string;
  CONCURRENCY?: string;
  LOCK_MS?: string;
  STALLED_MS?: string;
  MAX_STALLED?: string;
  HANDLER_DELAY_MS?: string;
}

export interface WorkerProcess extends SpawnedProcess {
  readonly pid: number;
}

/** Start test/inbox/fixtures/worker.ts; resolves once it fetches events. */
export async function startWorker(env: WorkerEnv): Promise<WorkerProcess> {
  const started = await startProcess(process.execPath, ['--import', 'tsx', WORKER], {
    name: 'inbox worker',
    cwd: ROOT,
    env: { SECRET, ...env },
    ready: /"ready":true/,
    timeoutMs: 30_000,
  });
  return Object.assign(started, { pid: started.child.pid! });
}

/** Every completed handler run the workers logged: event id, process and time. */
export async function completedRuns(redis: Redis, logKey: string): Promise<Map<string, LoggedRun[]>> {
  return runsByEvent(await redis.lrange(logKey, 0, -1));
}
