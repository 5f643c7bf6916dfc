import {
  RawBodyUnavailableError,
  readsTenant,
  type WebhookResponse,
  type Webhooks,
} from 'service-webhooks/core';
import { readWebBody } from './read-web-body.js';
import { refusedBody } from './refused-body.js';

/**
 * The flow every Fetch-`Request` adapter shares (web, Next.js App Router): refuse a body already read,
 * read the raw bytes within `maxBodyBytes` and the receiver's `bodyBudget`, hand them to the core.
 * Adapters differ only in the fix they name when something read the body first. Web APIs only, so it
 * runs on edge runtimes.
 */
export async function answerWebRequest(
  webhooks: Webhooks,
  request: Request,
  consumedFix: string,
  params?: Readonly<Record<string, string | undefined>>,
): Promise<WebhookResponse> {
  if (request.bodyUsed) return webhooks.reject(new RawBodyUnavailableError(consumedFix));
  const read = await readWebBody(request, webhooks.maxBodyBytes, webhooks.bodyBudget);
  if (read.kind !== 'body') return refusedBody(webhooks, read.kind);
  const { headers, method } = request;
  // `readsTenant` is a property read: only a receiver with `tenant` is given the URL and parameters.
  return webhooks.handle(
    readsTenant(webhooks)
      ? { body: read.body, headers, method, url: request.url, params }
      : { body: read.body, headers, method },
  );
}
