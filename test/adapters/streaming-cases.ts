/**
 * Cases about how an adapter reads the body over a real socket, which the shared table cannot show:
 * a huge body is cut at maxBodyBytes + 1 rather than buffered, and nothing touches the store before
 * the whole body arrived (a slow sender cannot hold a claim).
 */
import { request as httpRequest } from 'node:http';
import type { AddressInfo, Server } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { createWebhooks, type IdempotencyStore, MemoryStore, type Webhooks } from 'service-webhooks';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { MAX_BODY_BYTES, SECRET } from './adapter-cases.js';

export interface Listening {
  /** The webhook route's full URL. */
  url: string;
  close(): Promise<void>;
}

/** Listen on a free loopback port and return the URL of `path`. */
export async function listenUrl(server: Server, path = '/webhooks'): Promise<Listening> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        // Sockets of cut-off uploads must not keep close() waiting.
        (server as Server & { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}

/** A MemoryStore that records every call. */
export function spyStore(): IdempotencyStore & { calls: string[] } {
  const inner = new MemoryStore();
  const calls: string[] = [];
  return {
    calls,
    claim(id, token, leaseMs) {
      calls.push(`claim ${id}`);
      return inner.claim(id, token, leaseMs);
    },
    complete(id, token, ttlMs) {
      calls.push(`complete ${id}`);
      return inner.complete(id, token, ttlMs);
    },
    release(id, token) {
      calls.push(`release ${id}`);
      return inner.release(id, token);
    },
  };
}

const HUGE = 50 * 1024 * 1024;

interface HugeResult {
  status: number;
  body: string;
  /** The largest rise of heap + ArrayBuffer memory seen while sending. */
  peakGrowth: number;
}

/** POST 50 MB, chunked or announced in Content-Length, stopping as soon as the answer comes. */
function sendHuge(url: string, announce: boolean): Promise<HugeResult> {
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  const measure = () => {
    const { heapUsed, arrayBuffers } = process.memoryUsage();
    return heapUsed + arrayBuffers;
  };
  const baseline = measure();
  let peak = baseline;
  const sampler = setInterval(() => {
    peak = Math.max(peak, measure());
  }, 5);
  return new Promise<HugeResult>((resolve, reject) => {
    let answered = false;
    let sent = 0;
    const request = httpRequest(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-service-signature': signPayload('{}', SECRET),
        ...(announce ? { 'content-length': String(HUGE) } : {}),
      },
    });
    request.on('response', (response) => {
      answered = true;
      const chunks: Buffer[] = [];
      response.on('data', (data: Buffer) => chunks.push(data));
      response.on('end', () => {
        clearInterval(sampler);
        request.destroy();
        const body = Buffer.concat(chunks).toString('utf8');
        resolve({ status: response.statusCode ?? 0, body, peakGrowth: peak - baseline });
      });
    });
    request.on('error', (error) => {
      clearInterval(sampler);
      if (!answered) reject(error);
    });
    const pump = () => {
      while (!answered && sent < HUGE) {
        sent += chunk.length;
        if (!request.write(chunk)) {
          request.once('drain', pump);
          return;
        }
      }
      if (!answered) request.end();
    };
    pump();
  });
}

/** Register the streaming cases for one adapter served over a real port. */
export function runStreamingCases(adapter: { name: string; start(webhooks: Webhooks): Promise<Listening> }) {
  describe(`${adapter.name}: streaming cases`, () => {
    const store = spyStore();
    let handled = 0;
    const webhooks = createWebhooks({ secret: SECRET, maxBodyBytes: MAX_BODY_BYTES, store });
    webhooks.on('user.created', () => {
      handled++;
    });
    let server: Listening;
    beforeAll(async () => {
      server = await adapter.start(webhooks);
    });
    afterAll(() => server?.close());

    for (const announce of [false, true]) {
      test(`a 50 MB body (${announce ? 'announced in Content-Length' : 'chunked'}) is cut off, not buffered: 413`, async () => {
        const result = await sendHuge(server.url, announce);
        expect(result.status).toBe(413);
        expect(JSON.parse(result.body).error.code).toBe('payload_too_large');
        // Buffering the body would add 50 MB; the limit is 8 kB, the rest is socket and sampler noise.
        expect(result.peakGrowth).toBeLessThan(20 * 1024 * 1024);
        expect(store.calls).toEqual([]);
      });
    }

    test('a slow sender cannot hold a claim: the store is untouched until the whole body arrived', async () => {
      const before = handled;
      const event = createTestEvent('user.created');
      const bytes = Buffer.from(JSON.stringify(event));
      const half = Math.floor(bytes.length / 2);
      const request = httpRequest(server.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': String(bytes.length),
          'x-service-signature': signPayload(bytes, SECRET),
        },
      });
      const answered = new Promise<number>((resolve, reject) => {
        request.on('response', (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode ?? 0));
        });
        request.on('error', reject);
      });
      request.write(bytes.subarray(0, half));
      await sleep(300);
      expect(store.calls.filter((call) => call.includes(event.id))).toEqual([]);
      expect(handled).toBe(before);
      request.end(bytes.subarray(half));
      expect(await answered).toBe(200);
      expect(store.calls.filter((call) => call.includes(event.id))).toEqual([
        `claim ${event.id}`,
        `complete ${event.id}`,
      ]);
      expect(handled).toBe(before + 1);
    });
  });
}
