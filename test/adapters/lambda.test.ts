import type {
  ALBHandler,
  ALBResult,
  APIGatewayProxyHandler,
  APIGatewayProxyHandlerV2,
  APIGatewayProxyResult,
  APIGatewayProxyStructuredResultV2,
  LambdaFunctionURLHandler,
} from 'aws-lambda';
import { createWebhooks, type Webhooks } from 'service-webhooks';
import { lambdaHandler } from 'service-webhooks/lambda';
import { createTestEvent } from 'service-webhooks/testing';
import { describe, expect, test } from 'vitest';
import {
  type AdapterClient,
  MAX_BODY_BYTES,
  type ReceivedResponse,
  runAdapterCases,
  SECRET,
  type SentRequest,
  signedRequest,
} from './adapter-cases.js';
import {
  albEvent,
  functionUrlEvent,
  type HttpRequestParts,
  httpApiEvent,
  lambdaContext,
  restApiEvent,
} from './fixtures/lambda-events.js';

type LambdaResult = APIGatewayProxyResult | APIGatewayProxyStructuredResultV2 | ALBResult;

interface EventSource {
  name: string;
  build(parts: HttpRequestParts): Parameters<ReturnType<typeof lambdaHandler>>[0];
  /** Check the answer has exactly the shape this source expects, and flatten it for the table. */
  read(result: LambdaResult): ReceivedResponse;
}

const REST_OR_ALB_KEYS = ['body', 'headers', 'isBase64Encoded', 'statusCode'];

function flat(result: LambdaResult): ReceivedResponse {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(result.headers ?? {}))
    headers[name.toLowerCase()] = String(value);
  if ('multiValueHeaders' in result) {
    for (const [name, values] of Object.entries(result.multiValueHeaders ?? {}))
      headers[name.toLowerCase()] = values.join(', ');
  }
  return { status: result.statusCode ?? 0, headers, body: result.body ?? '' };
}

const sources: EventSource[] = [
  {
    name: 'API Gateway REST (v1)',
    build: restApiEvent,
    read: (result) => {
      expect(Object.keys(result).sort()).toEqual(REST_OR_ALB_KEYS);
      expect(result.isBase64Encoded).toBe(false);
      return flat(result);
    },
  },
  {
    name: 'API Gateway HTTP API (v2)',
    build: httpApiEvent,
    read: (result) => {
      expect(Object.keys(result).sort()).toEqual(['body', 'headers', 'statusCode']);
      return flat(result);
    },
  },
  {
    name: 'Function URL',
    build: functionUrlEvent,
    read: (result) => {
      expect(Object.keys(result).sort()).toEqual(['body', 'headers', 'statusCode']);
      return flat(result);
    },
  },
  {
    name: 'ALB (single-value headers)',
    build: (parts) => albEvent(parts, false),
    read: (result) => {
      expect(Object.keys(result).sort()).toEqual([...REST_OR_ALB_KEYS, 'statusDescription'].sort());
      expect((result as ALBResult).statusDescription).toMatch(new RegExp(`^${result.statusCode} [A-Z]`));
      return flat(result);
    },
  },
  {
    name: 'ALB (multi-value headers)',
    build: (parts) => albEvent(parts, true),
    read: (result) => {
      expect(Object.keys(result).sort()).toEqual(
        ['body', 'isBase64Encoded', 'multiValueHeaders', 'statusCode', 'statusDescription'].sort(),
      );
      expect((result as ALBResult).statusDescription).toMatch(new RegExp(`^${result.statusCode} [A-Z]`));
      return flat(result);
    },
  },
];

function lambdaClient(webhooks: Webhooks, source: EventSource, base64: boolean): AdapterClient {
  const handler = lambdaHandler(webhooks);
  return {
    send: async (sent: SentRequest) => {
      const event = source.build({ ...sent, base64 });
      return source.read(await handler(event, lambdaContext()));
    },
    close: async () => {},
  };
}

for (const source of sources) {
  for (const base64 of [false, true]) {
    runAdapterCases({
      name: `lambda ${source.name}, ${base64 ? 'base64' : 'plain'} body`,
      ownsRoute: true,
      start: async (webhooks) => lambdaClient(webhooks, source, base64),
    });
  }
}

describe('lambda: platform limits', () => {
  test("the handler fits each source's own handler type from @types/aws-lambda", () => {
    const handler = lambdaHandler(createWebhooks({ secret: SECRET }));
    const typed: [APIGatewayProxyHandler, APIGatewayProxyHandlerV2, LambdaFunctionURLHandler, ALBHandler] = [
      handler,
      handler,
      handler,
      handler,
    ];
    expect(typed).toHaveLength(4);
  });

  test('a short remaining time shortens the handler deadline: 503 handler_timeout before Lambda would kill it', async () => {
    const webhooks = createWebhooks({ secret: SECRET, handlerTimeoutMs: 25_000 });
    webhooks.onError(() => {});
    let aborted = false;
    webhooks.on('user.created', (_event, { signal }) => {
      return new Promise<void>((resolve) => {
        signal.addEventListener('abort', () => {
          aborted = true;
          resolve();
        });
        setTimeout(resolve, 10_000);
      });
    });
    const handler = lambdaHandler(webhooks);
    const sent = signedRequest(JSON.stringify(createTestEvent('user.created')));
    const remainingMs = 1_500;
    const started = Date.now();
    const result = await handler(httpApiEvent({ ...sent, base64: false }), lambdaContext(remainingMs));
    const took = Date.now() - started;
    expect(result.statusCode).toBe(503);
    expect(JSON.parse(result.body ?? '').error.code).toBe('handler_timeout');
    expect(result.headers?.['retry-after']).toBeDefined();
    expect(aborted).toBe(true);
    expect(took).toBeLessThan(remainingMs);
  });

  test('an oversized base64 body is refused from its encoded length, without decoding it', async () => {
    const webhooks = createWebhooks({ secret: SECRET, maxBodyBytes: MAX_BODY_BYTES });
    webhooks.onError(() => {});
    const handler = lambdaHandler(webhooks);
    const event = httpApiEvent({ ...signedRequest('{}'), base64: true });
    // Not valid base64 at all: decoding would fail, so a 413 proves the length alone decided.
    event.body = '!'.repeat(Math.ceil(((MAX_BODY_BYTES + 1) * 4) / 3) + 4);
    const result = await handler(event, lambdaContext());
    expect(result.statusCode).toBe(413);
    expect(JSON.parse(result.body ?? '').error.code).toBe('payload_too_large');
  });

  test('base64 is decoded as bytes: a body that is not valid UTF-8 still verifies over its exact bytes', async () => {
    const webhooks = createWebhooks({ secret: SECRET });
    webhooks.onError(() => {});
    const handler = lambdaHandler(webhooks);
    // Latin-1 "é" (0xE9) is invalid UTF-8: an adapter that decoded base64 to text would change the bytes.
    const json = JSON.stringify(createTestEvent('user.created', { data: { name: 'Ren\u00e9' } }));
    const bytes = Uint8Array.from(json, (char) => char.charCodeAt(0));
    const result = await handler(httpApiEvent({ ...signedRequest(bytes), base64: true }), lambdaContext());
    // The signature matched the exact bytes (not 401); the core then refuses the invalid UTF-8 itself.
    expect(result.statusCode).toBe(400);
    expect(JSON.parse(result.body ?? '').error.code).toBe('invalid_request');
  });
});
