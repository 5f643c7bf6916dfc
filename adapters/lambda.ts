import type {
  ALBEvent,
  ALBResult,
  APIGatewayProxyEvent,
  APIGatewayProxyEventV2,
  APIGatewayProxyResult,
  APIGatewayProxyStructuredResultV2,
  Context,
} from 'aws-lambda';
import {
  InvalidRequestError,
  PayloadTooLargeError,
  type WebhookResponse,
  type Webhooks,
} from 'service-webhooks/core';

/**
 * The events one handler accepts: API Gateway REST (v1) and HTTP API (v2), ALB. A Function URL event is
 * an `APIGatewayProxyEventV2` (`LambdaFunctionURLEvent` is an alias of it).
 */
export type LambdaWebhookEvent = APIGatewayProxyEvent | APIGatewayProxyEventV2 | ALBEvent;

/**
 * A Lambda handler whose answer has the shape its event source expects. `context` is optional only so
 * that the handler can be called by hand; Lambda always passes it, and its remaining time bounds the
 * handlers.
 */
export interface LambdaWebhookHandler {
  (event: ALBEvent, context?: Pick<Context, 'getRemainingTimeInMillis'>): Promise<ALBResult>;
  (
    event: APIGatewayProxyEventV2,
    context?: Pick<Context, 'getRemainingTimeInMillis'>,
  ): Promise<APIGatewayProxyStructuredResultV2>;
  (
    event: APIGatewayProxyEvent,
    context?: Pick<Context, 'getRemainingTimeInMillis'>,
  ): Promise<APIGatewayProxyResult>;
  (
    event: LambdaWebhookEvent,
    context?: Pick<Context, 'getRemainingTimeInMillis'>,
  ): Promise<LambdaWebhookResult>;
}

/** What the handler answers, in the shape of the event it was given. */
export type LambdaWebhookResult = APIGatewayProxyResult | APIGatewayProxyStructuredResultV2 | ALBResult;

/**
 * Time kept back from the function's remaining time: enough to serialise the answer and return it
 * before Lambda kills the invocation, which the sender would only see as a 502 with no retry hint.
 */
export const LAMBDA_SAFETY_MARGIN_MS = 500;

const REASONS: Readonly<Record<number, string>> = {
  200: 'OK',
  400: 'Bad Request',
  401: 'Unauthorized',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Payload Too Large',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/**
 * One AWS Lambda handler for every HTTP event source: API Gateway REST APIs (payload v1) and HTTP APIs
 * (payload v1 or v2), Lambda Function URLs and Application Load Balancers (with or without multi-value
 * headers). Base64 bodies are decoded to the exact bytes, header names are matched case-insensitively,
 * anything but POST is answered 405, and the handlers' deadline is the shorter of `handlerTimeoutMs`
 * and the invocation's remaining time less {@link LAMBDA_SAFETY_MARGIN_MS}.
 *
 * @example
 * ```ts
 * import { createWebhooks } from 'service-webhooks';
 * import { lambdaHandler } from 'service-webhooks/lambda';
 *
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! });
 * webhooks.on('user.created', async (event) => console.log(event.data.email));
 *
 * export const handler = lambdaHandler(webhooks);
 * ```
 */
export function lambdaHandler(webhooks: Webhooks): LambdaWebhookHandler {
  const handler = async (
    event: LambdaWebhookEvent,
    context?: Pick<Context, 'getRemainingTimeInMillis'>,
  ): Promise<LambdaWebhookResult> => {
    const processor = processorFor(event);
    return processor.result(await answer(webhooks, event, processor, context));
  };
  return handler as LambdaWebhookHandler;
}

/** How one event source gives its request and takes its answer; {@link processorFor} picks it per event. */
interface EventProcessor {
  readonly method: string;
  /** Names lower-cased; multi-value headers (REST APIs, ALB with the option on) joined as HTTP does. */
  readonly headers: Record<string, string>;
  result(response: WebhookResponse): LambdaWebhookResult;
}

/** Told once from the event's shape: ALB, payload 2.0 (HTTP APIs, Function URLs), else payload 1.0. */
function processorFor(event: LambdaWebhookEvent): EventProcessor {
  if ('elb' in event.requestContext) {
    const alb = event as ALBEvent;
    return {
      method: alb.httpMethod,
      headers: lowerCased(alb.headers, alb.multiValueHeaders),
      result: (response) => {
        const { statusCode, headers, ...rest } = restResult(response);
        const statusDescription = `${statusCode} ${REASONS[statusCode] ?? ''}`.trim();
        // An ALB target group with multi-value headers on ignores `headers` in the answer, and vice versa.
        return alb.multiValueHeaders
          ? { statusCode, statusDescription, multiValueHeaders: multiValued(response.headers), ...rest }
          : { statusCode, statusDescription, headers, ...rest };
      },
    };
  }
  if ('version' in event && event.version === '2.0') {
    return {
      method: event.requestContext.http.method,
      headers: lowerCased(event.headers, undefined),
      result: ({ status: statusCode, headers, body }) => ({ statusCode, headers: { ...headers }, body }),
    };
  }
  const rest = event as APIGatewayProxyEvent;
  return {
    method: rest.httpMethod,
    headers: lowerCased(rest.headers, rest.multiValueHeaders),
    result: restResult,
  };
}

function restResult({ status: statusCode, headers, body }: WebhookResponse): APIGatewayProxyResult {
  return { statusCode, headers: { ...headers }, body, isBase64Encoded: false };
}

async function answer(
  webhooks: Webhooks,
  event: LambdaWebhookEvent,
  { method, headers }: EventProcessor,
  context: Pick<Context, 'getRemainingTimeInMillis'> | undefined,
): Promise<WebhookResponse> {
  const raw = event.body ?? '';
  let body: Uint8Array | string = raw;
  if (event.isBase64Encoded) {
    // Refuse from the encoded length alone, before allocating the decoded copy of an oversized body.
    if (decodedLength(raw) > webhooks.maxBodyBytes) return webhooks.reject(new PayloadTooLargeError());
    try {
      body = decodeBase64(raw);
    } catch {
      return webhooks.reject(new InvalidRequestError('The body is marked base64 but is not valid base64.'));
    }
  }
  const remaining = context?.getRemainingTimeInMillis();
  return webhooks.handle({
    body,
    headers,
    method,
    ...(remaining === undefined ? {} : { handlerTimeoutMs: remaining - LAMBDA_SAFETY_MARGIN_MS }),
  });
}

type HeaderMap<V> = Readonly<Record<string, V | undefined>> | null | undefined;

function lowerCased(single: HeaderMap<string>, multi: HeaderMap<string[]>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, values] of Object.entries(multi ?? {}))
    if (values) headers[name.toLowerCase()] = values.join(', ');
  for (const [name, value] of Object.entries(single ?? {})) {
    // REST APIs send both maps; the single-value one holds only the last value, so the joined one wins.
    if (value !== undefined && !(name.toLowerCase() in headers)) headers[name.toLowerCase()] = value;
  }
  return headers;
}

function multiValued(headers: Readonly<Record<string, string>>): Record<string, string[]> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, [value]]));
}

/** The byte length base64 text decodes to (API Gateway and ALB never wrap lines). */
function decodedLength(base64: string): number {
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0;
  return Math.floor((base64.length * 3) / 4) - padding;
}

/** Base64 to bytes with Web APIs only: `atob` yields one char per byte, so no text decoding touches it. */
function decodeBase64(base64: string): Uint8Array {
  const binary = atob(base64);
  const bytes = new Uint8Array(binary.length);
  for (let index = 0; index < binary.length; index++) bytes[index] = binary.charCodeAt(index);
  return bytes;
}
