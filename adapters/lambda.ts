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
  type AnyWebhooks,
  InvalidRequestError,
  PayloadTooLargeError,
  readsTenant,
  type WebhookResponse,
  type Webhooks,
} from 'service-webhooks/core';
import { decodeBase64, decodedLength } from './internal/base64-body.js';
import {
  type EventProcessor,
  type LambdaWebhookEvent,
  type LambdaWebhookResult,
  processorFor,
} from './internal/lambda-event-source.js';

export type { LambdaWebhookEvent, LambdaWebhookResult } from './internal/lambda-event-source.js';

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

/**
 * Time kept back from the function's remaining time: enough to serialise the answer and return it
 * before Lambda kills the invocation, which the sender would only see as a 502 with no retry hint.
 */
export const LAMBDA_SAFETY_MARGIN_MS = 500;

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
export function lambdaHandler(receiver: AnyWebhooks): LambdaWebhookHandler {
  const webhooks = receiver as Webhooks;
  // Asked once: only a receiver with `tenant` gets the path parameters and the URL.
  const withTarget = readsTenant(webhooks);
  const handler = async (
    event: LambdaWebhookEvent,
    context?: Pick<Context, 'getRemainingTimeInMillis'>,
  ): Promise<LambdaWebhookResult> => {
    const processor = processorFor(event);
    return processor.result(await answer(webhooks, event, processor, context, withTarget));
  };
  return handler as LambdaWebhookHandler;
}

async function answer(
  webhooks: Webhooks,
  event: LambdaWebhookEvent,
  processor: EventProcessor,
  context: Pick<Context, 'getRemainingTimeInMillis'> | undefined,
  withTarget: boolean,
): Promise<WebhookResponse> {
  const { method, headers } = processor;
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
    ...(withTarget ? processor.target() : {}),
  });
}
