/**
 * One table of cases that every real runtime (Bun, Deno, workerd) answers with the same expectations,
 * over real HTTP, from an example receiver that imports the BUILT package. test/adapters/adapter-cases.ts
 * cannot serve here: its receiver lives in the test's process, while these run in another runtime, so
 * "the handler ran" is read from the line each example's handler logs (`user.created <id> <email>`).
 */
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { waitForLine } from '../support/process.js';
import { SECRET } from './runtime-process.js';

/** A receiver running in another runtime, and what it printed. */
export interface RuntimeReceiver {
  /** The webhook route's full URL. */
  url: string;
  /** Everything the runtime printed to stdout so far. */
  output(): string;
  /** stdout and stderr, for failure messages. */
  describe(): string;
  /** Call `listener` on each stdout chunk; returns the unsubscribe. */
  onOutput(listener: () => void): () => void;
  close(): Promise<void>;
}

export interface RuntimeUnderTest {
  /** Shown in the test names: the runtime and its version. */
  name: string;
  /**
   * The largest body a sender may write whole, before reading the answer, and still get the 413: the
   * receiver stops reading at maxBodyBytes, and what the runtime does with the unread rest decides
   * whether the answer arrives (Bun and Deno drain it) or the connection is reset under the sender
   * (workerd closes it with the bytes unread). Bigger uploads must still never hang nor reach a handler.
   */
  cleanRefusalUpTo: number;
  start(): Promise<RuntimeReceiver>;
}

/** The examples' `maxBodyBytes`. */
export const MAX_BODY_BYTES = 16 * 1024;

const encoder = new TextEncoder();

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

/** What a sender saw: an answer, or the connection failing (with the error's code), or nothing in time. */
type Outcome = { kind: 'answer'; answer: Answer } | { kind: 'failed'; code: string } | { kind: 'hang' };

async function send(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: Uint8Array | ReadableStream<Uint8Array> },
  timeoutMs = 10_000,
): Promise<Outcome> {
  try {
    const response = await fetch(url, {
      method: init.method ?? 'POST',
      headers: init.headers,
      body: init.body,
      duplex: 'half',
      signal: AbortSignal.timeout(timeoutMs),
    } as RequestInit);
    return {
      kind: 'answer',
      answer: { status: response.status, headers: response.headers, text: await response.text() },
    };
  } catch (error) {
    if ((error as Error).name === 'TimeoutError') return { kind: 'hang' };
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return { kind: 'failed', code: cause?.code ?? cause?.message ?? String(error) };
  }
}

/** The answer, or a failure that names what the sender saw instead. */
async function answerTo(url: string, init: Parameters<typeof send>[1]): Promise<Answer> {
  const outcome = await send(url, init);
  if (outcome.kind === 'answer') return outcome.answer;
  throw new Error(`no answer: ${outcome.kind === 'hang' ? 'nothing within 10 s' : outcome.code}`);
}

function signed(body: string | Uint8Array, secret = SECRET) {
  const bytes = typeof body === 'string' ? encoder.encode(body) : body;
  return {
    headers: { 'content-type': 'application/json', 'x-service-signature': signPayload(bytes, secret) },
    body: bytes,
  };
}

/** A valid `user.created` whose JSON is padded with trailing spaces to exactly `size` bytes. */
function eventOfSize(size: number) {
  const event = createTestEvent('user.created');
  const json = JSON.stringify(event);
  const bytes = new Uint8Array(size).fill(0x20);
  bytes.set(encoder.encode(json));
  return { event, bytes };
}

function errorCode(answer: Answer): unknown {
  return (JSON.parse(answer.text) as { error?: { code?: unknown } }).error?.code;
}

function sizeLabel(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${bytes / 1024 / 1024} MiB` : `${bytes / 1024} KiB`;
}

/** Register the shared cases for one runtime as a vitest describe block. */
export function runRuntimeCases(runtime: RuntimeUnderTest): void {
  describe(`${runtime.name}: shared runtime cases`, () => {
    let receiver: RuntimeReceiver;
    beforeAll(async () => {
      receiver = await runtime.start();
    });
    afterAll(async () => {
      await receiver?.close();
    });

    /**
     * How many times the handler ran for `id`. A sentinel delivery is sent and awaited first: the
     * runtime prints in order, so once the sentinel's line is out, every earlier handler's line is too.
     */
    const handlerRuns = async (id: string) => {
      const sentinel = createTestEvent('user.created');
      const answer = await answerTo(receiver.url, signed(JSON.stringify(sentinel)));
      expect(answer.status, `the sentinel delivery: ${answer.text}`).toBe(200);
      await waitForLine(receiver, new RegExp(`user\\.created ${sentinel.id} `));
      return receiver
        .output()
        .split('\n')
        .filter((line) => line.includes(`user.created ${id} `)).length;
    };

    test('valid delivery: 200 and the handler ran once', async () => {
      const event = createTestEvent('user.created');
      const answer = await answerTo(receiver.url, signed(JSON.stringify(event)));
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
      expect(JSON.parse(answer.text)).toEqual({ received: true });
      expect(await handlerRuns(event.id)).toBe(1);
    });

    test('duplicate: 200 with x-webhook-duplicate: true, the handler not run again', async () => {
      const delivery = signed(JSON.stringify(createTestEvent('user.created')));
      const event = JSON.parse(new TextDecoder().decode(delivery.body)) as { id: string };
      expect((await answerTo(receiver.url, delivery)).status).toBe(200);
      const again = await answerTo(receiver.url, delivery);
      expect(again.status).toBe(200);
      expect(again.headers.get('x-webhook-duplicate')).toBe('true');
      expect(JSON.parse(again.text)).toEqual({ received: true, duplicate: true });
      expect(await handlerRuns(event.id)).toBe(1);
    });

    test('forged signature: 401 invalid_signature, no handler', async () => {
      const event = createTestEvent('user.created');
      const answer = await answerTo(receiver.url, signed(JSON.stringify(event), 'not-the-secret'));
      expect(answer.status).toBe(401);
      expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
      expect(errorCode(answer)).toBe('invalid_signature');
      expect(await handlerRuns(event.id)).toBe(0);
    });

    test("a signed user.created without data.email fails the examples' first-party schema: 500 event_schema_mismatch, no handler", async () => {
      const event = createTestEvent('user.created');
      const { email: _dropped, ...data } = event.data;
      const answer = await answerTo(receiver.url, signed(JSON.stringify({ ...event, data })));
      expect(answer.status).toBe(500);
      expect(errorCode(answer)).toBe('event_schema_mismatch');
      expect(await handlerRuns(event.id)).toBe(0);
    });

    test('missing signature: 401 missing_signature', async () => {
      const answer = await answerTo(receiver.url, { body: encoder.encode('{}') });
      expect(answer.status).toBe(401);
      expect(errorCode(answer)).toBe('missing_signature');
    });

    test('bad JSON after a valid signature: 400 invalid_request', async () => {
      const answer = await answerTo(receiver.url, signed('{"id": "evt_1", "type": '));
      expect(answer.status).toBe(400);
      expect(errorCode(answer)).toBe('invalid_request');
    });

    test(`a body of exactly maxBodyBytes (${sizeLabel(MAX_BODY_BYTES)}): 200`, async () => {
      const { event, bytes } = eventOfSize(MAX_BODY_BYTES);
      const answer = await answerTo(receiver.url, signed(bytes));
      expect(answer.status, answer.text).toBe(200);
      expect(await handlerRuns(event.id)).toBe(1);
    });

    test('one byte over, announced in Content-Length: 413 payload_too_large', async () => {
      const { event, bytes } = eventOfSize(MAX_BODY_BYTES + 1);
      const answer = await answerTo(receiver.url, signed(bytes));
      expect(answer.status).toBe(413);
      expect(errorCode(answer)).toBe('payload_too_large');
      expect(await handlerRuns(event.id)).toBe(0);
    });

    test('one byte over, streamed without Content-Length (chunked): 413 payload_too_large', async () => {
      const { event, bytes } = eventOfSize(MAX_BODY_BYTES + 1);
      const { headers } = signed(bytes);
      const half = Math.floor(bytes.byteLength / 2);
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes.subarray(0, half));
          controller.enqueue(bytes.subarray(half));
          controller.close();
        },
      });
      const answer = await answerTo(receiver.url, { headers, body });
      expect(answer.status).toBe(413);
      expect(errorCode(answer)).toBe('payload_too_large');
      expect(await handlerRuns(event.id)).toBe(0);
    });

    for (const size of [256 * 1024, 8 * 1024 * 1024]) {
      const clean = size <= runtime.cleanRefusalUpTo;
      const expected = clean ? '413 reaches the sender' : 'refused (413 or a reset connection), never a hang';
      test(`a ${sizeLabel(size)} body written whole before the answer is read: ${expected}; the next delivery is handled`, async () => {
        const { event, bytes } = eventOfSize(size);
        const outcome = await send(receiver.url, signed(bytes));
        const seen =
          outcome.kind === 'answer'
            ? `${outcome.answer.status} ${outcome.answer.text.slice(0, 80)}`
            : outcome.kind === 'failed'
              ? `connection failed: ${outcome.code}`
              : 'no answer within 10 s';
        console.info(`${runtime.name}, ${sizeLabel(size)} upload refused: the sender saw ${seen}`);
        expect(outcome.kind, seen).not.toBe('hang');
        if (clean || outcome.kind === 'answer') {
          expect(outcome.kind, seen).toBe('answer');
          if (outcome.kind === 'answer') {
            expect(outcome.answer.status, seen).toBe(413);
            expect(errorCode(outcome.answer)).toBe('payload_too_large');
          }
        }
        expect(await handlerRuns(event.id)).toBe(0);
      });
    }

    test('wrong method: 405 method_not_allowed with Allow: POST', async () => {
      for (const method of ['GET', 'PUT', 'DELETE']) {
        const answer = await answerTo(receiver.url, { method });
        expect(answer.status, method).toBe(405);
        expect(answer.headers.get('allow'), method).toBe('POST');
        expect(errorCode(answer), method).toBe('method_not_allowed');
      }
    });
  });
}
