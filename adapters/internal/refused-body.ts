import {
  PayloadTooLargeError,
  ReceiverBusyError,
  type WebhookResponse,
  type Webhooks,
} from 'service-webhooks/core';

/**
 * The answer to a body the readers stopped reading: over `maxBodyBytes` is 413 `payload_too_large`,
 * beyond the receiver's `bodyBudget` is 503 `receiver_busy` (with `Retry-After`, so the sender retries).
 * Web APIs only, so the Fetch readers share it on edge runtimes.
 */
export function refusedBody(webhooks: Webhooks, kind: 'too_large' | 'busy'): WebhookResponse {
  return webhooks.reject(kind === 'too_large' ? new PayloadTooLargeError() : new ReceiverBusyError());
}
