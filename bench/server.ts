/**
 * One receiver under load, in its own process (forked by http.ts with an IPC channel): the variant is
 * argv[2]. It answers `{ port }` once listening, and `{ peak }` (memory high-water marks since the last
 * `sample`) when asked, so the load generator never shares a core's heap or event loop with it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createNodeMiddleware, Webhooks as OctokitWebhooks } from '@octokit/webhooks';
import express from 'express';
import Fastify, { type FastifyPluginAsync } from 'fastify';
import { Redis } from 'ioredis';
import { createWebhooks, type IdempotencyStore, MemoryStore, type Webhooks } from 'service-webhooks';
import { nodeHandler } from 'service-webhooks/node';
import { floorPipeline, type Headers } from './floor.js';
import { EVENT_TYPE, median, PATH, SECRET } from './shared.js';

export const VARIANTS = [
  'node-adapter',
  'node-hand',
  'node-hand-copy',
  'node-octokit',
  'express-adapter',
  'express-hand',
  'fastify-adapter',
  'fastify-hand',
  'node-redis',
  'node-redis-pipelined',
] as const;
export type VariantName = (typeof VARIANTS)[number];

export type ServerMessage =
  | { readonly type: 'ready'; readonly port: number }
  | {
      readonly type: 'peak';
      readonly peak: MemoryPeak;
      readonly baseline: MemoryPeak;
      readonly live: MemoryPeak | undefined;
      /** CPU time (user + system, µs) this process spent since the last `mark` or `sample`. */
      readonly cpuMicros: number;
    }
  | { readonly type: 'sampled' }
  | { readonly type: 'failed'; readonly message: string };
export type ParentMessage =
  | { readonly type: 'sample' }
  | { readonly type: 'mark' }
  | { readonly type: 'report' };

export interface MemoryPeak {
  readonly rss: number;
  readonly heapUsed: number;
  readonly arrayBuffers: number;
}

/**
 * With BENCH_LIVE=1 the handler measures what is alive while it runs, after a full collection: the
 * bytes a delivery really holds (body copies, decoded text, parsed event). The median over deliveries is
 * reported, because V8 frees the backing stores of dead buffers off-thread: a single sample can still
 * count an earlier delivery's bytes, while a copy a delivery really holds shows in every sample.
 */
const gc = (globalThis as { gc?: () => void }).gc;
let liveSamples: MemoryPeak[] = [];
const noop =
  process.env.BENCH_LIVE === '1' && gc
    ? async (): Promise<void> => {
        gc();
        liveSamples.push(memory());
      }
    : async (): Promise<void> => {};

function medianOf(samples: readonly MemoryPeak[]): MemoryPeak | undefined {
  if (samples.length === 0) return undefined;
  return {
    rss: median(samples.map((sample) => sample.rss)),
    heapUsed: median(samples.map((sample) => sample.heapUsed)),
    arrayBuffers: median(samples.map((sample) => sample.arrayBuffers)),
  };
}
/**
 * The dedup window and the replay window of every receiver alike. An hour: the request file is signed
 * once, with one `created`, at the start of the HTTP sections, and a longer bench reached the last
 * group more than ten minutes later, where a 600-second window answered every delivery 400
 * event_too_old. Short enough that a bench killed before its clean-up leaves Redis keys for an hour.
 */
const DEDUP_SECONDS = 3600;

function receiver(store: IdempotencyStore): Webhooks {
  const webhooks = createWebhooks({
    secret: SECRET,
    store,
    dedupTtlSeconds: DEDUP_SECONDS,
    maxEventAgeSeconds: DEDUP_SECONDS,
  });
  webhooks.on(EVENT_TYPE, noop);
  return webhooks;
}

function handPipeline() {
  return floorPipeline(new Map([[EVENT_TYPE, noop]]));
}

const OK = '{"received":true}';
const UNAUTHORIZED = '{"error":{"code":"invalid_signature","message":"Invalid signature."}}';

function handNode(): (request: IncomingMessage, response: ServerResponse) => void {
  const pipeline = handPipeline();
  return (request, response) => {
    if (request.method !== 'POST') {
      response.writeHead(405).end();
      return;
    }
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', async () => {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      const status = await pipeline(body, request.headers);
      response
        .writeHead(status, { 'content-type': 'application/json' })
        .end(status === 200 ? OK : UNAUTHORIZED);
    });
  };
}

interface ExpressAdapterModule {
  expressWebhooks(
    webhooks: Webhooks,
  ): (request: IncomingMessage, response: ServerResponse, next: () => void) => void;
}
interface FastifyAdapterModule {
  fastifyWebhooks: FastifyPluginAsync<{ webhooks: Webhooks; path?: string }>;
}

/** Adapters written in parallel with the bench are loaded by name, so a missing one skips its runs. */
async function load<T>(specifier: string): Promise<T> {
  return (await import(specifier)) as T;
}

async function redisStore(
  enableAutoPipelining: boolean,
): Promise<{ store: IdempotencyStore; cleanup: () => Promise<void> }> {
  const { RedisStore } = await load<{
    RedisStore: new (options: { client: Redis; prefix?: string }) => IdempotencyStore;
  }>('service-webhooks/redis');
  const client = new Redis({
    host: '127.0.0.1',
    port: 6379,
    enableOfflineQueue: false,
    lazyConnect: true,
    enableAutoPipelining,
  });
  await client.connect();
  const prefix = `service-webhooks-bench:${process.pid}:${Date.now()}:`;
  return {
    store: new RedisStore({ client, prefix }),
    cleanup: async () => {
      let cursor = '0';
      do {
        const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) await client.unlink(...keys);
      } while (cursor !== '0');
      client.disconnect();
    },
  };
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function start(variant: VariantName): Promise<{ port: number; cleanup?: () => Promise<void> }> {
  switch (variant) {
    case 'node-adapter':
      return { port: await listen(createServer(nodeHandler(receiver(new MemoryStore())))) };
    case 'node-redis':
    case 'node-redis-pipelined': {
      const { store, cleanup } = await redisStore(variant === 'node-redis-pipelined');
      return { port: await listen(createServer(nodeHandler(receiver(store)))), cleanup };
    }
    case 'node-hand':
    // The A/A control: the same route in a second process, so a run shows its own noise floor.
    case 'node-hand-copy':
      return { port: await listen(createServer(handNode())) };
    case 'node-octokit': {
      const octokit = new OctokitWebhooks({ secret: SECRET });
      octokit.on('push', noop);
      return { port: await listen(createServer(createNodeMiddleware(octokit, { path: PATH }))) };
    }
    case 'express-adapter': {
      const { expressWebhooks } = await load<ExpressAdapterModule>('service-webhooks/express');
      const app = express();
      app.post(PATH, expressWebhooks(receiver(new MemoryStore())));
      return { port: await listen(createServer(app)) };
    }
    case 'express-hand': {
      const pipeline = handPipeline();
      const app = express();
      app.post(PATH, express.raw({ type: 'application/json', limit: '1mb' }), async (request, response) => {
        const status = await pipeline(request.body as Buffer, request.headers as Headers);
        if (status === 200) response.json({ received: true });
        else response.status(status).json({ error: { code: 'invalid_signature' } });
      });
      return { port: await listen(createServer(app)) };
    }
    case 'fastify-adapter': {
      const { fastifyWebhooks } = await load<FastifyAdapterModule>('service-webhooks/fastify');
      const app = Fastify();
      await app.register(fastifyWebhooks, { webhooks: receiver(new MemoryStore()), path: PATH });
      await app.listen({ port: 0, host: '127.0.0.1' });
      return { port: (app.server.address() as AddressInfo).port };
    }
    case 'fastify-hand': {
      const pipeline = handPipeline();
      const app = Fastify({ bodyLimit: 1_048_576 });
      app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) =>
        done(null, body),
      );
      app.post(PATH, async (request, reply) => {
        const status = await pipeline(request.body as Buffer, request.headers);
        if (status === 200) return { received: true };
        return reply.code(status).send({ error: { code: 'invalid_signature' } });
      });
      await app.listen({ port: 0, host: '127.0.0.1' });
      return { port: (app.server.address() as AddressInfo).port };
    }
  }
}

function memory(): MemoryPeak {
  const { rss, heapUsed, arrayBuffers } = process.memoryUsage();
  return { rss, heapUsed, arrayBuffers };
}

/**
 * Memory once the garbage of earlier deliveries is gone, for a baseline. V8 frees the backing stores
 * of dead buffers on another thread after a collection, and on the receiver's single pinned core that
 * thread may not have run yet when gc() returns: a baseline read at once still counted the warm-up
 * deliveries' 1 MiB bodies, and once made the hand-written route's body copies read 0.00 instead of 2.
 */
async function settledMemory(): Promise<MemoryPeak> {
  let previous = Number.POSITIVE_INFINITY;
  for (let attempt = 0; attempt < 20; attempt++) {
    gc?.();
    await new Promise((resolve) => setTimeout(resolve, 10));
    const now = memory();
    if (now.arrayBuffers >= previous) return now;
    previous = now.arrayBuffers;
  }
  return memory();
}

function send(message: ServerMessage): void {
  process.send?.(message);
}

const variant = process.argv[2] as VariantName;
try {
  if (!VARIANTS.includes(variant)) throw new Error(`Unknown variant ${String(variant)}.`);
  const { port, cleanup } = await start(variant);
  let baseline = memory();
  let peak = baseline;
  let sampler: ReturnType<typeof setInterval> | undefined;
  let cpuMark = process.cpuUsage();
  process.on('message', (message: ParentMessage) => {
    if (message.type === 'mark') {
      cpuMark = process.cpuUsage();
    } else if (message.type === 'sample') {
      void settledMemory().then((settled) => {
        cpuMark = process.cpuUsage();
        baseline = settled;
        peak = baseline;
        liveSamples = [];
        clearInterval(sampler);
        sampler = setInterval(() => {
          const now = memory();
          peak = {
            rss: Math.max(peak.rss, now.rss),
            heapUsed: Math.max(peak.heapUsed, now.heapUsed),
            arrayBuffers: Math.max(peak.arrayBuffers, now.arrayBuffers),
          };
        }, 2);
        send({ type: 'sampled' });
      });
    } else if (message.type === 'report') {
      clearInterval(sampler);
      const cpu = process.cpuUsage(cpuMark);
      send({ type: 'peak', peak, baseline, live: medianOf(liveSamples), cpuMicros: cpu.user + cpu.system });
    }
  });
  process.on('disconnect', () => {
    void (cleanup?.() ?? Promise.resolve()).finally(() => process.exit(0));
  });
  send({ type: 'ready', port });
} catch (error) {
  send({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
  process.exit(1);
}
