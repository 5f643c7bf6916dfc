import type {
  StandardSchemaIssue,
  StandardSchemaResult,
  StandardSchemaV1,
  WebhookEventMap,
  WebhookEventName,
} from 'service-webhooks/core';
import { isPlainObject } from '../parsing/plain-object.js';

/** A field of `data` the spec documents for a resource, beyond `object` and `id`. */
type DataField = 'name' | 'email';

/** Issues found so far; made on the first one, so an event that passes allocates nothing. */
type Issues = StandardSchemaIssue[] | undefined;

/** A deliberately loose e-mail check: the service checks the format when the user is written. */
const EMAIL = /^[^\s@]+@[^\s@]+$/;

function add(issues: Issues, path: readonly PropertyKey[], message: string): StandardSchemaIssue[] {
  const list = issues ?? [];
  list.push({ message, path });
  return list;
}

function isNonEmptyString(value: unknown): boolean {
  return typeof value === 'string' && value.length > 0;
}

/** The envelope's rules, as the spec states them. Fields it does not document pass through. */
function checkEnvelope(event: Record<string, unknown>, type: string, issues: Issues): Issues {
  const { id, created, livemode, pending_webhooks: pending, request } = event;
  if (!isNonEmptyString(id)) issues = add(issues, ['id'], 'must be a non-empty string');
  if (event.type !== type) issues = add(issues, ['type'], `must be "${type}"`);
  if (!Number.isSafeInteger(created))
    issues = add(issues, ['created'], 'must be a whole number (Unix seconds)');
  if (typeof livemode !== 'boolean') issues = add(issues, ['livemode'], 'must be true or false');
  if (pending !== undefined && !(Number.isSafeInteger(pending) && (pending as number) >= 0))
    issues = add(issues, ['pending_webhooks'], 'must be a whole number from 0');
  if (request !== undefined && request !== null) {
    if (!isPlainObject(request)) issues = add(issues, ['request'], 'must be an object');
    else if (request.id !== null && typeof request.id !== 'string')
      issues = add(issues, ['request', 'id'], 'must be a string or null');
  }
  return issues;
}

function checkData(data: unknown, resource: string, fields: readonly DataField[], issues: Issues): Issues {
  if (!isPlainObject(data)) return add(issues, ['data'], 'must be an object');
  if (data.object !== resource) issues = add(issues, ['data', 'object'], `must be "${resource}"`);
  if (!isNonEmptyString(data.id)) issues = add(issues, ['data', 'id'], 'must be a non-empty string');
  for (const field of fields) {
    const value = data[field];
    if (field === 'email') {
      if (typeof value !== 'string' || !EMAIL.test(value))
        issues = add(issues, ['data', 'email'], 'must be an e-mail address');
    } else if (typeof value !== 'string') issues = add(issues, ['data', field], 'must be a string');
  }
  return issues;
}

/**
 * The Standard Schema of one documented event type: the envelope, `data.object` and `data.id`, and
 * the fields the spec documents for the resource (a user's `name` and `email`). It lets unknown fields
 * through and gives the event itself as its output (no copy), so it costs a few property reads.
 */
export function documentedEvent<Type extends WebhookEventName>(
  type: Type,
  resource: string,
  fields: readonly DataField[] = [],
): StandardSchemaV1<unknown, WebhookEventMap[Type]> {
  return Object.freeze({
    '~standard': Object.freeze({
      version: 1 as const,
      vendor: 'service-webhooks',
      validate(value: unknown): StandardSchemaResult<WebhookEventMap[Type]> {
        if (!isPlainObject(value))
          return { issues: [{ message: 'must be an object (the event)', path: [] }] };
        const issues = checkData(value.data, resource, fields, checkEnvelope(value, type, undefined));
        return issues === undefined ? { value: value as unknown as WebhookEventMap[Type] } : { issues };
      },
    }),
  });
}
