import type {
  ALBEvent,
  ALBResult,
  APIGatewayProxyEvent,
  APIGatewayProxyEventV2,
  APIGatewayProxyResult,
  APIGatewayProxyStructuredResultV2,
} from 'aws-lambda';
import type { WebhookResponse } from 'service-webhooks/core';

/**
 * The Lambda adapter's event sources: API Gateway payload 1.0 (REST APIs), payload 2.0 (HTTP APIs,
 * Function URLs) and ALB, each told from the event's shape once, with the request it gives and the
 * answer it takes.
 */

/**
 * The events one handler accepts: API Gateway REST (v1) and HTTP API (v2), ALB. A Function URL event is
 * an `APIGatewayProxyEventV2` (`LambdaFunctionURLEvent` is an alias of it).
 */
export type LambdaWebhookEvent = APIGatewayProxyEvent | APIGatewayProxyEventV2 | ALBEvent;

/** What the handler answers, in the shape of the event it was given. */
export type LambdaWebhookResult = APIGatewayProxyResult | APIGatewayProxyStructuredResultV2 | ALBResult;

/** An ALB answer needs its status line's reason phrase (`statusDescription`). */
const REASONS: Readonly<Record<number, string>> = {
  200: 'OK',
  400: 'Bad Request',
  401: 'Unauthorized',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Payload Too Large',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** How one event source gives its request and takes its answer; {@link processorFor} picks it per event. */
export interface EventProcessor {
  readonly method: string;
  /** Names lower-cased; multi-value headers (REST APIs, ALB with the option on) joined as HTTP does. */
  readonly headers: Record<string, string>;
  /**
   * The path parameters API Gateway matched (`/webhooks/{account}`) and the request's path with its
   * query, read only for a receiver with `tenant`. A Function URL and ALB have no parameters.
   */
  target(): {
    readonly params: Readonly<Record<string, string | undefined>> | undefined;
    readonly url: string;
  };
  result(response: WebhookResponse): LambdaWebhookResult;
}

/**
 * Told once from the event's shape: ALB, payload 2.0 (HTTP APIs, Function URLs), else payload 1.0. Each
 * source is a function of its own, so a function behind one source compiles only that source's reader
 * on its first delivery.
 */
// biome-ignore format: the parentheses make V8 compile it with the module, not on the first delivery
export const processorFor = (function processorFor(event: LambdaWebhookEvent): EventProcessor {
  if ('elb' in event.requestContext) return albProcessor(event as ALBEvent);
  if ('version' in event && event.version === '2.0') return httpProcessor(event);
  return restProcessor(event as APIGatewayProxyEvent);
});

function albProcessor(alb: ALBEvent): EventProcessor {
  return {
    method: alb.httpMethod,
    headers: lowerCased(alb.headers, alb.multiValueHeaders),
    target: () => ({
      params: undefined,
      url: withQuery(alb.path, alb.multiValueQueryStringParameters, alb.queryStringParameters),
    }),
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

// biome-ignore format: the parentheses make V8 compile it with the module, not on the first delivery
const httpProcessor = (function httpProcessor(http: APIGatewayProxyEventV2): EventProcessor {
  return {
    method: http.requestContext.http.method,
    headers: lowerCased(http.headers, undefined),
    // Payload 2.0 keeps the query as it came (`rawQueryString`), already encoded.
    target: () => ({
      params: http.pathParameters ?? undefined,
      url: http.rawQueryString ? `${http.rawPath}?${http.rawQueryString}` : http.rawPath,
    }),
    result: ({ status: statusCode, headers, body }) => ({ statusCode, headers: { ...headers }, body }),
  };
});

function restProcessor(rest: APIGatewayProxyEvent): EventProcessor {
  return {
    method: rest.httpMethod,
    headers: lowerCased(rest.headers, rest.multiValueHeaders),
    target: () => ({
      params: rest.pathParameters ?? undefined,
      url: withQuery(rest.path, rest.multiValueQueryStringParameters, rest.queryStringParameters),
    }),
    result: restResult,
  };
}

function restResult({ status: statusCode, headers, body }: WebhookResponse): APIGatewayProxyResult {
  return { statusCode, headers: { ...headers }, body, isBase64Encoded: false };
}

type HeaderMap<V> = Readonly<Record<string, V | undefined>> | null | undefined;

// biome-ignore format: the parentheses make V8 compile it with the module, not on the first delivery
const lowerCased = (function lowerCased(single: HeaderMap<string>, multi: HeaderMap<string[]>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, values] of Object.entries(multi ?? {}))
    if (values) headers[name.toLowerCase()] = values.join(', ');
  for (const [name, value] of Object.entries(single ?? {})) {
    // REST APIs send both maps; the single-value one holds only the last value, so the joined one wins.
    if (value !== undefined && !(name.toLowerCase() in headers)) headers[name.toLowerCase()] = value;
  }
  return headers;
});

function multiValued(headers: Readonly<Record<string, string>>): Record<string, string[]> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, [value]]));
}

/**
 * A payload 1.0 or ALB path with its query rebuilt from the decoded parameters (the multi-value map
 * when the source sends one: it holds every value, the single one only the last).
 */
function withQuery(path: string, multi: HeaderMap<string[]>, single: HeaderMap<string>): string {
  const query = new URLSearchParams();
  if (multi) {
    for (const [name, values] of Object.entries(multi))
      for (const value of values ?? []) query.append(name, value);
  } else {
    for (const [name, value] of Object.entries(single ?? {}))
      if (value !== undefined) query.append(name, value);
  }
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}
