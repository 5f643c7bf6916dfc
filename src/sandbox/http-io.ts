import type { IncomingMessage, ServerResponse } from 'node:http';
import { invalidRequest, requestError } from './api-errors.js';

/** Largest request body the sandbox reads; the service documents none. */
export const MAX_REQUEST_BYTES = 1_048_576;

/** The body of a request as text; 413 past {@link MAX_REQUEST_BYTES}. */
export async function readBodyText(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_REQUEST_BYTES) {
      throw requestError(413, 'payload_too_large', `The body is larger than ${MAX_REQUEST_BYTES} bytes.`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The JSON body of a request, `undefined` when empty; 413 past {@link MAX_REQUEST_BYTES}, 400 if not JSON. */
export async function readJsonBody(request: IncomingMessage): Promise<unknown> {
  const text = await readBodyText(request);
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalidRequest('body', 'is not valid JSON');
  }
}

/** Write `body` as JSON with `status` and extra `headers`. */
export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}

/** Write an HTML page with status 200. */
export function sendHtml(response: ServerResponse, html: string): void {
  response.writeHead(200, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(html),
    'cache-control': 'no-store',
  });
  response.end(html);
}

/** Redirect to `location` with `status` (302 from a GET, 303 after a form POST). */
export function redirect(response: ServerResponse, status: 302 | 303, location: string): void {
  response.writeHead(status, { location, 'cache-control': 'no-store', 'content-length': 0 });
  response.end();
}
