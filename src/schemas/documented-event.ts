import type {
  StandardSchemaIssue,
  StandardSchemaResult,
  StandardSchemaV1,
  WebhookEventMap,
  WebhookEventName,
} from 'service-webhooks/core';

/** A field of `data` the spec documents for a resource, beyond `object` and `id`. */
type DataField = 'name' | 'email';

type Issues = StandardSchemaIssue[];

/** A deliberately loose e-mail check: the service checks the format when the user is written. */
const EMAIL = /^[^\s@]+@[^\s@]+$/;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function check(issues: Issues, ok: boolean, path: readonly PropertyKey[], message: string): void {
  if (!ok) issues.push({ message, path });
}

/** The envelope's rules, as the spec states them. Fields it does not document pass through. */
function checkEnvelope(event: Record<string, unknown>, type: string, issues: Issues): void {
  const { id, created, livemode, pending_webhooks: pending, request } = event;
  check(issues, typeof id === 'string' && id.length > 0, ['id'], 'must be a non-empty string');
  check(issues, event.type === type, ['type'], `must be "${type}"`);
  check(issues, Number.isSafeInteger(created), ['created'], 'must be a whole number (Unix seconds)');
  check(issues, typeof livemode === 'boolean', ['livemode'], 'must be true or false');
  if (pending !== undefined)
    check(
      issues,
      Number.isSafeInteger(pending) && (pending as number) >= 0,
      ['pending_webhooks'],
      'must be a whole number from 0',
    );
  if (request !== undefined && request !== null) {
    if (!isRecord(request)) check(issues, false, ['request'], 'must be an object');
    else
      check(
        issues,
        request.id === null || typeof request.id === 'string',
        ['request', 'id'],
        'must be a string or null',
      );
  }
}

function checkData(data: unknown, resource: string, fields: readonly DataField[], issues: Issues): void {
  if (!isRecord(data)) {
    check(issues, false, ['data'], 'must be an object');
    return;
  }
  check(issues, data.object === resource, ['data', 'object'], `must be "${resource}"`);
  check(
    issues,
    typeof data.id === 'string' && data.id.length > 0,
    ['data', 'id'],
    'must be a non-empty string',
  );
  for (const field of fields) {
    const value = data[field];
    if (field === 'email')
      check(
        issues,
        typeof value === 'string' && EMAIL.test(value),
        ['data', 'email'],
        'must be an e-mail address',
      );
    else check(issues, typeof value === 'string', ['data', field], 'must be a string');
  }
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
        if (!isRecord(value)) return { issues: [{ message: 'must be an object (the event)', path: [] }] };
        const issues: Issues = [];
        checkEnvelope(value, type, issues);
        checkData(value.data, resource, fields, issues);
        return issues.length === 0 ? { value: value as unknown as WebhookEventMap[Type] } : { issues };
      },
    }),
  });
}
