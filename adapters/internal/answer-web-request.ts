import { RawBodyUnavailableError, type WebhookResponse, type Webhooks } from 'service-webhooks/core';
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
): Promise<WebhookResponse> {
  if (request.bodyUsed) return webhooks.reject(new RawBodyUnavailableError(consumedFix));
  const read = await readWebBody(request, webhooks.maxBodyBytes, webhooks.bodyBudget);
  if (read.kind !== 'body') return refusedBody(webhooks, read.kind);
  return webhooks.handle({ body: read.body, headers: request.headers, method: request.method });
}
