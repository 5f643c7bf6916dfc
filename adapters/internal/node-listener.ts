import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  answerNow,
  type HandleInput,
  RawBodyUnavailableError,
  readsTenant,
  type WebhookResponse,
  type Webhooks,
} from 'service-webhooks/core';
import { readNodeBody } from './read-node-body.js';
import { refusedBody } from './refused-body.js';

/**
 * How an adapter finds its framework's route parameters on a Node request (Express `req.params`, a
 * Next.js Pages route's `req.query`), for a receiver with `tenant`.
 */
export type RouteParams = (
  request: IncomingMessage,
) => Readonly<Record<string, string | undefined>> | undefined;

const noParams: RouteParams = () => undefined;

/**
 * The string values of a record of parameters (a query's repeated names and a catch-all's segments
 * are arrays: joined with `/`, as the path had them); anything else is left out.
 */
export function stringParams(record: unknown): Readonly<Record<string, string | undefined>> | undefined {
  if (typeof record !== 'object' || record === null) return undefined;
  const params: Record<string, string> = {};
  for (const [name, value] of Object.entries(record)) {
    if (typeof value === 'string') params[name] = value;
    else if (Array.isArray(value) && value.every((item) => typeof item === 'string'))
      params[name] = value.join('/');
  }
  return params;
}

/** A `(req, res, next?)` listener, as `node:http`, Connect and Express call it. */
export type NodeListener = (
  request: IncomingMessage & { body?: unknown },
  response: ServerResponse,
  next?: (error?: unknown) => void,
) => Promise<void>;

/**
 * The listener every Node-request adapter shares: read the raw bytes within `maxBodyBytes` and the
 * receiver's `bodyBudget`, hand them to the core, write its answer. Adapters differ only in the fix
 * they name when a body parser got to the bytes first. The returned promise settles once the answer is
 * written (or the request dropped); it never rejects.
 *
 * Written with callbacks rather than `async`/`await`: each await of the read and of `handle()` cost a
 * promise and a trip through the microtask queue per request, a measurable share of a webhook's cost.
 */
export function createNodeListener(
  webhooks: Webhooks,
  consumedFix: string,
  paramsOf: RouteParams = noParams,
): NodeListener {
  // Asked once: a receiver without `tenant` gets the same input as ever, nothing more per delivery.
  const withTarget = readsTenant(webhooks);
  return (request, response, next) =>
    new Promise<void>((resolve) => {
      const fail = (error: unknown) => {
        // Only a genuine stream error gets here (the core never throws): hand it to the host app's error
        // handling (Express 4 ignores rejected promises), or drop the connection.
        if (next) next(error);
        else request.destroy(error as Error);
        resolve();
      };
      const write = (answer: WebhookResponse) => {
        try {
          writeNodeResponse(response, answer);
          resolve();
        } catch (error) {
          fail(error);
        }
      };
      readNodeBody(request, webhooks.maxBodyBytes, webhooks.bodyBudget, (error, read) => {
        try {
          if (read === undefined) throw error;
          switch (read.kind) {
            case 'body': {
              const method = request.method ?? 'POST';
              // Written in this tick when the core answers at once (the memory store, synchronous handlers).
              const input: HandleInput = withTarget
                ? {
                    body: read.body,
                    headers: request.headers,
                    method,
                    params: paramsOf(request),
                    // Express's `originalUrl` keeps the mount path that `url` loses under a router.
                    url: (request as { originalUrl?: string }).originalUrl ?? request.url,
                  }
                : { body: read.body, headers: request.headers, method };
              const answer = answerNow(webhooks, input);
              if (answer instanceof Promise) answer.then(write);
              else write(answer);
              return;
            }
            case 'too_large':
            case 'busy':
              // Stop the sender from streaming the rest: answer, then close the connection.
              response.shouldKeepAlive = false;
              response.once('finish', () => request.destroy());
              write(refusedBody(webhooks, read.kind));
              return;
            case 'consumed':
              write(webhooks.reject(new RawBodyUnavailableError(consumedFix)));
              return;
            case 'aborted':
              // The client went away mid-body: nobody to answer, and nothing for the host app to report
              // (Express's final handler would print a stack trace for every client that hung up).
              resolve();
              return;
          }
        } catch (cause) {
          fail(cause);
        }
      });
    });
}

/**
 * The core's headers plus the body's length, per answer. The core shares its answers, so this is
 * computed once per answer rather than per delivery; the WeakMap lets one-off answers go, and the last
 * answer is checked first, as a run of deliveries mostly gets the same one.
 */
const withLength = new WeakMap<WebhookResponse, Readonly<Record<string, string>>>();
let lastAnswer: WebhookResponse | undefined;
let lastHeaders: Readonly<Record<string, string>> = {};

/**
 * Write the core's answer, framed by its length. `writeHead` fixes the head before `end` sees the body,
 * so without a Content-Length Node answers chunked: more bytes, and several socket writes where one
 * does (measured: about a tenth less CPU per request on a bare node:http server).
 */
export function writeNodeResponse(response: ServerResponse, result: WebhookResponse): void {
  let headers = result === lastAnswer ? lastHeaders : withLength.get(result);
  if (headers === undefined) {
    headers = { ...result.headers, 'content-length': String(Buffer.byteLength(result.body)) };
    withLength.set(result, headers);
  }
  lastAnswer = result;
  lastHeaders = headers;
  response.writeHead(result.status, headers);
  // `end(body)` hands the socket two chunks, the head with the body and an empty one that carries the
  // finish callback, so Node flushes them with writev: measured on a bare node:http server, about 4 us
  // more CPU per answer than the one write a body-less answer gets. `write` corks the socket until the
  // next tick; undoing that one cork (and only it) flushes head and body as one write, after which `end`
  // has nothing left to send.
  const socket = response.socket;
  const corked = socket?.writableCorked;
  response.write(result.body);
  if (corked === 0 && socket?.writableCorked === 1) socket.uncork();
  response.end();
}
