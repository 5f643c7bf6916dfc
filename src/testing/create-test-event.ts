import type { WebhookEventMap, WebhookEventName } from 'service-webhooks/core';

/**
 * Fields to change on a test event. `data` is merged into the realistic default data, so a test sets
 * only what it cares about.
 */
export type TestEventOverrides<Name extends WebhookEventName> = Partial<
  Omit<WebhookEventMap[Name], 'type' | 'data'>
> & { data?: Partial<WebhookEventMap[Name]['data']> & Record<string, unknown> };

function randomId(prefix: string): string {
  return `${prefix}_${crypto.randomUUID().replaceAll('-', '').slice(0, 24)}`;
}

function defaultData(type: WebhookEventName): Record<string, unknown> {
  const resource = type.slice(0, type.indexOf('.'));
  const created_at = new Date().toISOString();
  switch (resource) {
    case 'user':
      return {
        object: 'user',
        id: randomId('usr'),
        name: 'Ada Lovelace',
        email: 'ada@example.com',
        created_at,
      };
    case 'project':
      return { object: 'project', id: randomId('prj'), name: 'Analytical Engine', created_at };
    default:
      return {
        object: 'payment',
        id: randomId('pay'),
        amount: 2500,
        currency: 'usd',
        status:
          type === 'payment.succeeded' ? 'succeeded' : type === 'payment.failed' ? 'failed' : 'refunded',
        created_at,
      };
  }
}

/**
 * A realistic event of any of the nine types, with every envelope field the service sends and a fresh
 * id, dated now.
 *
 * @example
 * ```ts
 * import { createTestEvent } from 'service-webhooks/testing';
 * const event = createTestEvent('user.created', { data: { email: 'grace@example.com' } });
 * ```
 */
export function createTestEvent<Name extends WebhookEventName>(
  type: Name,
  overrides: TestEventOverrides<Name> = {},
): WebhookEventMap[Name] {
  const { data, ...envelope } = overrides;
  return {
    id: randomId('evt'),
    type,
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    pending_webhooks: 1,
    request: { id: randomId('req') },
    ...envelope,
    data: { ...defaultData(type), ...data },
  } as unknown as WebhookEventMap[Name];
}
