import { invalidRequest } from './api-errors.js';

/**
 * Largest `limit` a list request accepts; the service does not document one.
 *
 * @example
 * ```ts
 * await fetch(`${sandbox.url}/users?limit=${MAX_PAGE_LIMIT}`, { headers });
 * ```
 */
export const MAX_PAGE_LIMIT = 100;
/** Page size when `limit` is omitted, as the service documents. */
export const DEFAULT_PAGE_LIMIT = 20;

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
