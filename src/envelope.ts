import { InvalidRequestError } from './errors.js';
import type { WebhookEvent } from './types.js';

/** Longest event id accepted: ids are store keys, so they are bounded. */
export const MAX_EVENT_ID_LENGTH = 255;

// biome-ignore format: the parentheses make V8 compile it with the module, not on the first delivery
const isPlainObject = (function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
});

/**
 * Parse a verified body and check the envelope fields the receiver relies on: `id` (the dedup key),
 * `type` (routing), `created` (the replay window), `data` and `livemode`. JSON.parse makes `__proto__`
 * an own property, so payload keys cannot reach any prototype.
 */
// biome-ignore format: the parentheses make V8 compile it with the module, not on the first delivery
export const parseEnvelope = (function parseEnvelope(text: string): WebhookEvent {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new InvalidRequestError('The body is not valid JSON.');
  }
  return checkEnvelope(value);
});

/**
 * The envelope check of {@link parseEnvelope} on a value already parsed: what an inbox worker applies
 * to the event it reads back from its queue, so that it runs handlers on nothing the door would refuse.
 * `path` names the value in messages (`event` → "`event.id` must be …"); without it, the body.
 */
// biome-ignore format: the parentheses make V8 compile it with the module, not on the first delivery
export const checkEnvelope = (function checkEnvelope(value: unknown, path?: string): WebhookEvent {
  const refuse = (field: string, rule: string) =>
    new InvalidRequestError(`\`${path === undefined ? field : `${path}.${field}`}\` must be ${rule}`);
  if (!isPlainObject(value)) {
    throw new InvalidRequestError(
      `${path === undefined ? 'The body' : `\`${path}\``} must be a JSON object.`,
    );
  }
  const { id, type, created, data, livemode, pending_webhooks, request } = value;
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_EVENT_ID_LENGTH) {
    throw refuse('id', `a non-empty string of at most ${MAX_EVENT_ID_LENGTH} characters.`);
  }
  if (typeof type !== 'string' || type.length === 0) throw refuse('type', 'a non-empty string.');
  if (!Number.isSafeInteger(created)) throw refuse('created', 'an integer (Unix seconds).');
  if (!isPlainObject(data)) throw refuse('data', 'an object.');
  if (typeof livemode !== 'boolean') throw refuse('livemode', 'a boolean.');
  if (pending_webhooks !== undefined && !Number.isSafeInteger(pending_webhooks)) {
    throw refuse('pending_webhooks', 'an integer when present.');
  }
  if (request !== undefined && request !== null && !isPlainObject(request)) {
    throw refuse('request', 'an object when present.');
  }
  return value as unknown as WebhookEvent;
});
