import { invalidRequest } from './api-errors.js';

/** Largest `limit` a list request accepts; the service does not document one. */
export const MAX_PAGE_LIMIT = 100;
/** Page size when `limit` is omitted, as the service documents. */
export const DEFAULT_PAGE_LIMIT = 20;

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

/** `limit` and `offset` of a list request. */
export interface Page {
  limit: number;
  offset: number;
}

function nonNegativeInteger(query: URLSearchParams, field: string, fallback: number): number {
  const raw = query.get(field);
  if (raw === null) return fallback;
  if (!/^\d{1,9}$/.test(raw)) throw invalidRequest(field, 'must be a non-negative integer');
  return Number(raw);
}

/** Read `limit` (default 20, 1 to 100) and `offset` (default 0) from the query string. */
export function parsePage(query: URLSearchParams): Page {
  const limit = nonNegativeInteger(query, 'limit', DEFAULT_PAGE_LIMIT);
  if (limit < 1 || limit > MAX_PAGE_LIMIT)
    throw invalidRequest('limit', `must be between 1 and ${MAX_PAGE_LIMIT}`);
  return { limit, offset: nonNegativeInteger(query, 'offset', 0) };
}

/**
 * The list wrapper every list endpoint answers with. The service leaves it open; this one carries
 * what a client needs to page: the page's bounds, the total and whether more follow.
 */
export interface ListBody<T> {
  object: 'list';
  data: T[];
  limit: number;
  offset: number;
  total: number;
  has_more: boolean;
}

/** One page of `items`. */
export function paginate<T>(items: readonly T[], page: Page): ListBody<T> {
  const data = items.slice(page.offset, page.offset + page.limit);
  return {
    object: 'list',
    data,
    limit: page.limit,
    offset: page.offset,
    total: items.length,
    has_more: page.offset + data.length < items.length,
  };
}
