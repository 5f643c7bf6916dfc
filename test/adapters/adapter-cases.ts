/**
 * One table of cases that every adapter runs with the same expectations, so that a behaviour proven
 * for one framework is proven for all. An adapter supplies `start`, which mounts a receiver on the real
 * framework and returns a client that sends raw HTTP-shaped requests to it.
 */
import { createWebhooks, RateLimitedError, type Webhooks } from 'service-webhooks';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

export interface SentRequest {
  method: string;
  headers: Record<string, string>;
  body: Uint8Array;
}

export interface ReceivedResponse {
  status: number;
  /** Header names lower-cased. */
  headers: Record<string, string>;
  body: string;
}

export interface AdapterClient {
  send(request: SentRequest): Promise<ReceivedResponse>;
  close(): Promise<void>;
}

export interface AdapterUnderTest {
  name: string;
  /** Whether the adapter owns its route and answers 405 to other methods. */
  ownsRoute: boolean;
  /**
   * Whether the answer reaches the client as the adapter framed it over HTTP/1.1, so its framing is
   * observable (not for Lambda events, `app.inject` or a Response object).
   */
  framedOnTheWire?: boolean;
  start(webhooks: Webhooks): Promise<AdapterClient>;
}

export const SECRET = 'whsec_adapter_cases';
export const MAX_BODY_BYTES = 8 * 1024;

const encoder = new TextEncoder();

export function signedRequest(body: string | Uint8Array, headers: Record<string, string> = {}): SentRequest {
  const bytes = typeof body === 'string' ? encoder.encode(body) : body;
  return {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-service-signature': signPayload(bytes, SECRET),
      ...headers,
    },
    body: bytes,
  };
}

/** A valid signed event whose JSON is padded with trailing spaces to exactly `size` bytes. */
export function bodyOfSize(size: number): string {
  const json = JSON.stringify(createTestEvent('user.created'));
  return json + ' '.repeat(size - encoder.encode(json).byteLength);
}

/** Register the shared cases for one adapter as a vitest describe block. */
export function runAdapterCases(adapter: AdapterUnderTest): void {
  describe(`${adapter.name}: shared adapter cases`, () => {
    let client: AdapterClient;
    const seen: { id: string; name: string }[] = [];
    let failures = 0;
    const webhooks = createWebhooks({ secret: SECRET, maxBodyBytes: MAX_BODY_BYTES });
    webhooks.on('user.created', (event) => {
      seen.push({ id: event.id, name: event.data.name });
    });
    webhooks.on('user.deleted', () => {
      failures++;
      throw new Error('database password is hunter2');
    });
    webhooks.on('user.updated', () => {
      throw new RateLimitedError(1_500);
    });
    webhooks.onError(() => {});
    const callsFor = (id: string) => seen.filter((s) => s.id === id).length;

    beforeAll(async () => {
      client = await adapter.start(webhooks);
    });
    afterAll(async () => {
      await client?.close();
    });

    test('valid delivery: 200 and the handler ran once', async () => {
      const event = createTestEvent('user.created');
      const response = await client.send(signedRequest(JSON.stringify(event)));
      expect(response.status).toBe(200);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(JSON.parse(response.body)).toEqual({ received: true });
      expect(callsFor(event.id)).toBe(1);
    });

    test('duplicate: 200 with x-webhook-duplicate, the handler not run again', async () => {
      const event = createTestEvent('user.created');
      const request = signedRequest(JSON.stringify(event));
      expect((await client.send(request)).status).toBe(200);
      const again = await client.send(request);
      expect(again.status).toBe(200);
      expect(again.headers['x-webhook-duplicate']).toBe('true');
      expect(callsFor(event.id)).toBe(1);
    });

    test('missing signature: 401 missing_signature', async () => {
      const event = createTestEvent('user.created');
      const { 'x-service-signature': _, ...headers } = signedRequest(JSON.stringify(event)).headers;
      const response = await client.send({
        method: 'POST',
        headers,
        body: encoder.encode(JSON.stringify(event)),
      });
      expect(response.status).toBe(401);
      expect(JSON.parse(response.body).error.code).toBe('missing_signature');
      expect(callsFor(event.id)).toBe(0);
    });

    test('wrong signature: 401 invalid_signature', async () => {
      const event = createTestEvent('user.created');
      const forged = signedRequest(JSON.stringify(event), {
        'x-service-signature': signPayload(JSON.stringify(event), 'not-the-secret'),
      });
      const response = await client.send(forged);
      expect(response.status).toBe(401);
      expect(JSON.parse(response.body).error.code).toBe('invalid_signature');
      expect(callsFor(event.id)).toBe(0);
    });

    test('a body of exactly maxBodyBytes: 200', async () => {
      const body = bodyOfSize(MAX_BODY_BYTES);
      const response = await client.send(signedRequest(body));
      expect(response.status).toBe(200);
      expect(callsFor(JSON.parse(body).id)).toBe(1);
    });

    test('one byte more than maxBodyBytes: 413 payload_too_large', async () => {
      const body = bodyOfSize(MAX_BODY_BYTES + 1);
      const response = await client.send(signedRequest(body));
      expect(response.status).toBe(413);
      expect(JSON.parse(response.body).error.code).toBe('payload_too_large');
      expect(callsFor(JSON.parse(body).id)).toBe(0);
    });

    if (adapter.ownsRoute) {
      test('not POST: 405 method_not_allowed with Allow: POST', async () => {
        for (const method of ['GET', 'PUT', 'DELETE']) {
          const response = await client.send({ method, headers: {}, body: new Uint8Array() });
          expect(response.status, method).toBe(405);
          expect(JSON.parse(response.body).error.code).toBe('method_not_allowed');
          // RFC 9110 §15.5.6: a 405 names the methods the resource supports.
          expect(response.headers.allow, method).toBe('POST');
        }
      });
    } else {
      test("not POST: the framework refuses it and no handler runs (the route is the framework's)", async () => {
        const event = createTestEvent('user.created');
        for (const method of ['GET', 'PUT', 'DELETE']) {
          const response = await client.send({ ...signedRequest(JSON.stringify(event)), method });
          expect([404, 405], method).toContain(response.status);
        }
        expect(callsFor(event.id)).toBe(0);
      });
    }

    test('handler throws: 500 handler_failed, nothing of the handler leaked', async () => {
      const before = failures;
      const response = await client.send(signedRequest(JSON.stringify(createTestEvent('user.deleted'))));
      expect(response.status).toBe(500);
      expect(JSON.parse(response.body).error.code).toBe('handler_failed');
      expect(response.body).not.toContain('hunter2');
      expect(failures).toBe(before + 1);
    });

    test("handler's downstream rate limited: 503 rate_limited with the wait as Retry-After", async () => {
      const response = await client.send(signedRequest(JSON.stringify(createTestEvent('user.updated'))));
      expect(response.status).toBe(503);
      expect(JSON.parse(response.body).error.code).toBe('rate_limited');
      expect(response.headers['retry-after']).toBe('2');
    });

    const exotic: Record<string, (json: string) => string | Uint8Array> = {
      emoji: (json) => json,
      'U+2028 and U+2029': (json) => json,
      'CRLF line ends': (json) => json.replace('{', '{\r\n').replace(/,"/g, ',\r\n"'),
      'a byte order mark': (json) => new Uint8Array([0xef, 0xbb, 0xbf, ...encoder.encode(json)]),
      'pretty-printed JSON': (json) => JSON.stringify(JSON.parse(json), null, 2),
    };
    const names: Record<string, string> = {
      emoji: 'Ada 🚀 Lovelace 👩🏽‍💻',
      'U+2028 and U+2029': 'line\u2028separator\u2029paragraph',
    };
    for (const [label, shape] of Object.entries(exotic)) {
      test(`bytes verified exactly: ${label}`, async () => {
        const name = names[label] ?? 'Ada Lovelace';
        const event = createTestEvent('user.created', { data: { name } });
        const response = await client.send(signedRequest(shape(JSON.stringify(event))));
        expect(response.status).toBe(200);
        expect(seen.find((s) => s.id === event.id)?.name).toBe(name);
      });
    }

    if (adapter.framedOnTheWire) {
      test('every answer is framed by its Content-Length, never chunked', async () => {
        const event = createTestEvent('user.created');
        const valid = signedRequest(JSON.stringify(event));
        const answers = [
          await client.send(valid),
          await client.send(valid),
          await client.send({ ...valid, headers: { ...valid.headers, 'x-service-signature': 'sha256=00' } }),
          // Back to a 200 after other answers: an answer's framing is its own, not the previous one's.
          await client.send(signedRequest(JSON.stringify(createTestEvent('user.created')))),
        ];
        expect(answers.map((answer) => answer.status)).toEqual([200, 200, 401, 200]);
        for (const answer of answers) {
          expect(answer.headers['transfer-encoding']).toBeUndefined();
          expect(answer.headers['content-length']).toBe(String(Buffer.byteLength(answer.body)));
        }
      });
    }

    test('mixed-case header names', async () => {
      const event = createTestEvent('user.created');
      const body = JSON.stringify(event);
      const response = await client.send({
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Service-SIGNATURE': signPayload(body, SECRET) },
        body: encoder.encode(body),
      });
      expect(response.status).toBe(200);
      expect(callsFor(event.id)).toBe(1);
    });
  });
}
