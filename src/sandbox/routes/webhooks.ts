import { randomBytes } from 'node:crypto';
import { EVENT_TYPES, isKnownEventType, type WebhookEventName } from 'service-webhooks/core';
import { createTestEvent } from 'service-webhooks/testing';
import type { Account } from '../account.js';
import { invalidRequest, requestError } from '../api-errors.js';
import { newId } from '../ids.js';
import { requireObject, stringField } from '../request-fields.js';
import type { WebhookRegistration } from '../resources.js';
import type { Router } from '../router.js';
import type { SandboxContext } from './context.js';

function urlField(
  fields: Record<string, unknown>,
  allowHttp: boolean,
  required: boolean,
): string | undefined {
  const raw = required ? stringField(fields, 'url', true) : stringField(fields, 'url', false);
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidRequest('url', 'must be an absolute URL');
  }
  if (url.protocol === 'https:') return raw;
  if (url.protocol === 'http:' && allowHttp) return raw;
  throw invalidRequest(
    'url',
    url.protocol === 'http:'
      ? 'must be an https:// address (start the sandbox with --allow-http to register http:// receivers such as localhost)'
      : 'must be an https:// address',
  );
}

function eventsField(fields: Record<string, unknown>, required: boolean): WebhookEventName[] | undefined {
  const events = fields.events;
  if (events === undefined) {
    if (required) throw invalidRequest('events', 'is required');
    return undefined;
  }
  if (!Array.isArray(events) || events.length === 0)
    throw invalidRequest('events', 'must be a non-empty array');
  for (const type of events) {
    if (typeof type !== 'string' || !isKnownEventType(type)) {
      throw invalidRequest(
        'events',
        `${JSON.stringify(type)} is not an event type (${EVENT_TYPES.join(', ')})`,
      );
    }
  }
  return [...new Set(events as WebhookEventName[])];
}

/** What the API shows of a registration: the secret only when it is created. */
function publicView({ secret: _secret, ...registration }: WebhookRegistration) {
  return registration;
}

/**
 * `/webhooks`: register (201, answering the secret once, generated as `whsec_…` when none is given),
 * list (without secrets), update (any of url, events, secret; a body with only `events` is accepted),
 * delete (200 `{ id, deleted: true }`) and `POST /webhooks/:id/test` (202), which delivers a realistic
 * event of the type given in the body or else the registration's first type. Unknown ids are 404
 * `webhook_not_found`. Without `--allow-http`, `http://` addresses are refused at registration.
 */
export function registerWebhookRoutes(router: Router, context: SandboxContext): void {
  const { allowHttp } = context;
  const find = (account: Account, id: string | undefined): WebhookRegistration => {
    const registration = id === undefined ? undefined : account.webhooks.get(id);
    if (registration === undefined) throw requestError(404, 'webhook_not_found', `No webhook with id ${id}.`);
    return registration;
  };

  router.add('POST', '/webhooks', ({ account, body }) => {
    const fields = requireObject(body);
    const registration: WebhookRegistration = {
      id: newId('wh'),
      url: urlField(fields, allowHttp, true)!,
      events: eventsField(fields, true)!,
      secret: stringField(fields, 'secret', false) ?? `whsec_${randomBytes(24).toString('hex')}`,
      created_at: new Date().toISOString(),
    };
    account.webhooks.set(registration.id, registration);
    account.changed();
    return { status: 201, body: registration };
  });

  router.add('GET', '/webhooks', ({ account }) => {
    const data = [...account.webhooks.values()].map(publicView);
    return { status: 200, body: { object: 'list', data, total: data.length } };
  });

  router.add('GET', '/webhooks/:id', ({ account, params }) => ({
    status: 200,
    body: publicView(find(account, params.id)),
  }));

  router.add('PUT', '/webhooks/:id', ({ account, params, body }) => {
    const registration = find(account, params.id);
    const fields = requireObject(body);
    const url = urlField(fields, allowHttp, false);
    const events = eventsField(fields, false);
    const secret = stringField(fields, 'secret', false);
    if (url === undefined && events === undefined && secret === undefined) {
      throw invalidRequest('body', 'must hold events, url or secret');
    }
    const updated: WebhookRegistration = {
      ...registration,
      ...(url !== undefined && { url }),
      ...(events !== undefined && { events }),
      ...(secret !== undefined && { secret }),
    };
    account.webhooks.set(updated.id, updated);
    account.changed();
    return { status: 200, body: publicView(updated) };
  });

  router.add('DELETE', '/webhooks/:id', ({ account, params }) => {
    const registration = find(account, params.id);
    account.webhooks.delete(registration.id);
    account.changed();
    return { status: 200, body: { id: registration.id, deleted: true } };
  });

  router.add('POST', '/webhooks/:id/test', ({ account, params, body, requestId }) => {
    const registration = find(account, params.id);
    const fields = body === undefined ? {} : requireObject(body);
    const type = fields.type ?? registration.events[0];
    if (typeof type !== 'string' || !isKnownEventType(type)) {
      throw invalidRequest('type', `must be one of ${EVENT_TYPES.join(', ')}`);
    }
    const event = createTestEvent(type, { livemode: false, request: { id: requestId } });
    const delivery = context.scheduler.deliverTo(account, registration, event);
    return { status: 202, body: { delivery_id: delivery.id, event } };
  });
}
