import { type AnyWebhooks, SIGNATURE_HEADER, signPayload, type WebhookResponse } from 'service-webhooks/core';

/**
 * How {@link deliver} sends an event.
 */
export interface DeliverOptions {
  /** The secret to sign with. */
  secret: string;
  /** The exact body to send, when the test needs bytes other than `JSON.stringify(event)`. */
  body?: string | Uint8Array;
  /** Extra headers, or a replacement signature header to test forgeries. */
  headers?: Record<string, string>;
}

/**
 * Sign an event as the service does and hand it to a receiver (one with `tenant` too: name the tenant
 * in `headers`, as its `tenant.from` reads it), without HTTP.
 *
 * @example
 * ```ts
 * import { createTestEvent, deliver } from 'service-webhooks/testing';
 * const response = await deliver(webhooks, createTestEvent('payment.failed'), { secret: 'whsec_test' });
 * expect(response.status).toBe(200);
 * ```
 */
export function deliver(
  webhooks: AnyWebhooks,
  event: unknown,
  options: DeliverOptions,
): Promise<WebhookResponse> {
  const body = options.body ?? JSON.stringify(event);
  return webhooks.handle({
    body,
    headers: {
      'content-type': 'application/json',
      [SIGNATURE_HEADER]: signPayload(body, options.secret),
      ...options.headers,
    },
  });
}
