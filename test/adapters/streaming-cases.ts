/**
 * Cases about how an adapter reads the body over a real socket, which the shared table cannot show:
 * a huge body is cut at maxBodyBytes + 1 rather than buffered, nothing touches the store before the
 * whole body arrived (a slow sender cannot hold a claim), and the bytes being read at once stay within
 * the receiver's `bodyBudget`, given back however a read ends.
 */
import { request as httpRequest } from 'node:http';
import type { AddressInfo, Server } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { createWebhooks, type IdempotencyStore, MemoryStore, type Webhooks } from 'service-webhooks';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { bodyOfSize, MAX_BODY_BYTES, type ReceivedResponse, SECRET, signedRequest } from './adapter-cases.js';
import { sendHttp } from './http-client.js';

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

/**
 * The store operations made for one event, in order. The core may scope the key it stores (a prefix
 * that belongs to the receiver), so calls are matched by the event id they contain.
 */
export function operationsOn(store: { calls: string[] }, eventId: string): string[] {
  return store.calls.filter((call) => call.includes(eventId)).map((call) => call.split(' ')[0]!);
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

export interface StreamingAdapter {
  name: string;
  /**
   * Whether the adapter closes the connection after refusing a body it stopped reading (413, 503), as
   * the Node adapters do; a Fetch handler cancels the stream and leaves the connection to its server.
   */
  closesRefused: boolean;
  start(webhooks: Webhooks): Promise<Listening>;
}

/** Register the streaming cases for one adapter served over a real port. */
export function runStreamingCases(adapter: StreamingAdapter) {
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
      expect(operationsOn(store, event.id)).toEqual(['claim', 'complete']);
      expect(handled).toBe(before + 1);
    });

    runBudgetCases(adapter);
  });
}

/** An upload whose body the test sends piece by piece, over a real socket. */
interface Upload {
  write(bytes: Uint8Array): void;
  end(bytes?: Uint8Array): void;
  /** Hang up mid-body, as a client that goes away does. */
  destroy(): void;
  answer: Promise<ReceivedResponse>;
}

/** Start a POST of the signed `body`, announced in Content-Length or (`chunked`) not, sending nothing of it yet. */
function startUpload(url: string, body: Uint8Array, chunked = false): Upload {
  const request = httpRequest(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-service-signature': signPayload(body, SECRET),
      ...(chunked ? {} : { 'content-length': String(body.byteLength) }),
    },
  });
  request.flushHeaders();
  const answer = new Promise<ReceivedResponse>((resolve, reject) => {
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(response.headers))
          if (typeof value === 'string') headers[name] = value;
        resolve({ status: response.statusCode ?? 0, headers, body: Buffer.concat(chunks).toString('utf8') });
      });
    });
    request.on('error', reject);
  });
  // A hang-up rejects `answer`; tests that hang up never wait for it.
  answer.catch(() => {});
  return {
    write: (bytes) => request.write(bytes),
    end: (bytes) => request.end(bytes),
    destroy: () => request.destroy(),
    answer,
  };
}

const BUDGET_BYTES = 1024;

/**
 * With a budget of one body (maxBodyBytes = maxBodyBytesInFlight = 1 KiB), a slow upload holding part
 * of it refuses concurrent deliveries with 503 receiver_busy, and every way a read can end gives its
 * bytes back: after each case `inUse` is 0 and a normal delivery is handled.
 */
function runBudgetCases(adapter: StreamingAdapter) {
  describe('body budget', () => {
    const webhooks = createWebhooks({
      secret: SECRET,
      maxBodyBytes: BUDGET_BYTES,
      maxBodyBytesInFlight: BUDGET_BYTES,
    });
    webhooks.on('user.created', () => {});
    webhooks.onError(() => {});
    const budget = webhooks.bodyBudget;
    let server: Listening;
    beforeAll(async () => {
      server = await adapter.start(webhooks);
    });
    afterAll(() => server?.close());

    /** The budget is whole again and the receiver still handles a normal delivery. */
    const expectRecovered = async () => {
      await expect.poll(() => budget.inUse).toBe(0);
      const after = await sendHttp(server.url, signedRequest(bodyOfSize(600)));
      expect(after.status).toBe(200);
      expect(budget.inUse).toBe(0);
    };

    test('a slow upload holding part of the budget: a concurrent delivery gets 503 receiver_busy with Retry-After', async () => {
      const slow = Buffer.from(bodyOfSize(1000));
      const upload = startUpload(server.url, slow);
      upload.write(slow.subarray(0, 700));
      await expect.poll(() => budget.inUse).toBe(700);

      const busy = await sendHttp(server.url, signedRequest(bodyOfSize(600)));
      expect(busy.status).toBe(503);
      expect(busy.headers['retry-after']).toMatch(/^\d+$/);
      expect(busy.headers['content-type']).toMatch(/^application\/json/);
      if (adapter.closesRefused) expect(busy.headers.connection).toBe('close');
      expect(JSON.parse(busy.body)).toEqual({
        error: { code: 'receiver_busy', message: expect.any(String) },
      });
      // The refused delivery kept nothing: only the slow upload's bytes are taken.
      expect(budget.inUse).toBe(700);

      upload.end(slow.subarray(700));
      expect((await upload.answer).status).toBe(200);
      await expectRecovered();
    });

    test('a delivery refused midway gives back the bytes it had taken', async () => {
      const slow = Buffer.from(bodyOfSize(1000));
      const upload = startUpload(server.url, slow);
      upload.write(slow.subarray(0, 700));
      await expect.poll(() => budget.inUse).toBe(700);

      const second = Buffer.from(bodyOfSize(600));
      const refused = startUpload(server.url, second, true);
      refused.write(second.subarray(0, 200));
      await expect.poll(() => budget.inUse).toBe(900);
      refused.write(second.subarray(200));
      const answer = await refused.answer;
      expect(answer.status).toBe(503);
      expect(JSON.parse(answer.body).error.code).toBe('receiver_busy');
      await expect.poll(() => budget.inUse).toBe(700);

      upload.end(slow.subarray(700));
      expect((await upload.answer).status).toBe(200);
      await expectRecovered();
    });

    test('a client that hangs up mid-body gives its bytes back', async () => {
      const slow = Buffer.from(bodyOfSize(1000));
      const upload = startUpload(server.url, slow);
      upload.write(slow.subarray(0, 700));
      await expect.poll(() => budget.inUse).toBe(700);
      upload.destroy();
      await expectRecovered();
    });

    test('a body found too large midway (413) gives its bytes back', async () => {
      const large = Buffer.from(bodyOfSize(1100));
      const upload = startUpload(server.url, large, true);
      upload.write(large.subarray(0, 700));
      await expect.poll(() => budget.inUse).toBe(700);
      upload.write(large.subarray(700));
      const answer = await upload.answer;
      expect(answer.status).toBe(413);
      expect(JSON.parse(answer.body).error.code).toBe('payload_too_large');
      await expectRecovered();
    });
  });
}
