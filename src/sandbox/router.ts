import type { Account } from './account.js';

/** What a route handler is given. */
export interface RouteRequest {
  /** The caller's account: the only data the request may see or change. */
  account: Account;
  /** Path parameters, such as `id` of `/users/:id`, already URL-decoded. */
  params: Readonly<Record<string, string>>;
  query: URLSearchParams;
  /** The parsed JSON body, `undefined` when there was none. */
  body: unknown;
  /** The id of this API request, carried by the events it causes as `request.id`. */
  requestId: string;
}

/** What a route answers: a status and a JSON body. */
export interface RouteResult {
  status: number;
  body: unknown;
}

/** Handles one route; throws `ApiError` for failures. */
export type RouteHandler = (request: RouteRequest) => RouteResult | Promise<RouteResult>;

/** How a path matched. */
export type RouteMatch =
  | { kind: 'found'; handler: RouteHandler; params: Record<string, string> }
  | { kind: 'method_not_allowed'; allow: string[] }
  | { kind: 'not_found' };

interface Route {
  method: string;
  segments: string[];
  handler: RouteHandler;
}

/** A tiny method-and-path router: literal segments and `:name` parameters, nothing more. */
export class Router {
  readonly #routes: Route[] = [];

  /** Register `handler` for `method` and a pattern such as `/users/:id`. */
  add(method: string, pattern: string, handler: RouteHandler): this {
    this.#routes.push({ method, segments: split(pattern), handler });
    return this;
  }

  /** Find the route for a request, telling a wrong method apart from an unknown path. */
  match(method: string, path: string): RouteMatch {
    const parts = split(path);
    const allow: string[] = [];
    for (const route of this.#routes) {
      const params = matchSegments(route.segments, parts);
      if (params === undefined) continue;
      if (route.method === method) return { kind: 'found', handler: route.handler, params };
      allow.push(route.method);
    }
    return allow.length > 0 ? { kind: 'method_not_allowed', allow } : { kind: 'not_found' };
  }
}

function split(path: string): string[] {
  return path.split('/').filter((part) => part !== '');
}

function matchSegments(
  pattern: readonly string[],
  parts: readonly string[],
): Record<string, string> | undefined {
  if (pattern.length !== parts.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const expected = pattern[i]!;
    const actual = parts[i]!;
    if (expected.startsWith(':')) {
      try {
        params[expected.slice(1)] = decodeURIComponent(actual);
      } catch {
        return undefined;
      }
    } else if (expected !== actual) {
      return undefined;
    }
  }
  return params;
}
