import { invalidRequest } from './api-errors.js';

/** A JSON object body, or `INVALID_REQUEST` on `body`. */
export function requireObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalidRequest('body', 'must be a JSON object');
  }
  return body as Record<string, unknown>;
}

/** A non-empty string field (trimmed), or `undefined` when absent and not required. */
export function stringField(body: Record<string, unknown>, field: string, required: true): string;
export function stringField(
  body: Record<string, unknown>,
  field: string,
  required: false,
): string | undefined;
export function stringField(
  body: Record<string, unknown>,
  field: string,
  required: boolean,
): string | undefined {
  const value = body[field];
  if (value === undefined) {
    if (required) throw invalidRequest(field, 'is required');
    return undefined;
  }
  if (typeof value !== 'string') throw invalidRequest(field, 'must be a string');
  const trimmed = value.trim();
  if (trimmed.length === 0) throw invalidRequest(field, 'must not be empty');
  if (trimmed.length > 500) throw invalidRequest(field, 'must be at most 500 characters');
  return trimmed;
}

// Deliberately loose: one @, no spaces, a dot in the domain. Stricter checks reject real addresses.
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** An e-mail field in a valid address format. */
export function emailField(body: Record<string, unknown>, field: string, required: true): string;
export function emailField(body: Record<string, unknown>, field: string, required: false): string | undefined;
export function emailField(
  body: Record<string, unknown>,
  field: string,
  required: boolean,
): string | undefined {
  const value = required ? stringField(body, field, true) : stringField(body, field, false);
  if (value !== undefined && !EMAIL.test(value))
    throw invalidRequest(field, 'must be a valid e-mail address');
  return value;
}
