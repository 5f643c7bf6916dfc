import { ConfigurationError } from './errors.js';
import { readHeader } from './signature.js';
import type { HandleInput, TenantRequest } from './types.js';

/**
 * How a receiver with `tenant` reads the tenant id from a request: the option turned, once, into one
 * function. What it returns is unverified (anyone may post to the address), so it only picks the
 * secret to verify with; `undefined` says the request names no tenant.
 */
export type TenantReader = (request: TenantRequest) => unknown;

/** The one `:name` segment of a `{ path }` pattern and the fixed text around it. */
const PATTERN_PARAMETER = /^:([A-Za-z_][\w-]*)$/;

/** A base for relative URLs: only the path and the query are read from it. */
const RELATIVE_BASE = 'http://receiver.invalid';

/** The option checked and made a reader; a mistake throws a `ConfigurationError` naming it. */
export function tenantReader(from: unknown): TenantReader {
  if (typeof from === 'function') return from as TenantReader;
  const source = from as Partial<Record<string, unknown>> | null;
  if (typeof source !== 'object' || source === null) throw misconfigured(from);
  const keys = Object.keys(source);
  if (keys.length !== 1) throw misconfigured(from);
  const [kind] = keys as [string];
  const value = source[kind];
  if (kind === 'host') {
    if (value === 'subdomain') return (request) => subdomainOf(request.header('host'));
    if (value === 'hostname') return (request) => hostnameOf(request.header('host'));
    throw misconfigured(from);
  }
  if (typeof value !== 'string' || value.length === 0) throw misconfigured(from);
  switch (kind) {
    case 'param':
      return (request) => request.params?.[value];
    case 'header':
      return (request) => request.header(value);
    case 'query':
      return (request) => urlOf(request.url)?.searchParams.get(value) ?? undefined;
    case 'path':
      return pathReader(value);
    default:
      throw misconfigured(from);
  }
}

/**
 * A reader of `{ path: '/webhooks/:account' }`: the request's path must have as many segments as the
 * pattern, the same text in every fixed one; the `:name` segment, percent-decoded, is the tenant.
 */
function pathReader(pattern: string): TenantReader {
  const segments = pattern.split('/');
  const at = segments.findIndex((segment) => PATTERN_PARAMETER.test(segment));
  if (at < 0 || segments.some((segment, index) => index !== at && segment.startsWith(':'))) {
    throw new ConfigurationError(
      `\`tenant.from.path\` needs exactly one \`:name\` segment, such as '/webhooks/:account'; got ${JSON.stringify(pattern)}.`,
    );
  }
  return (request) => {
    const path = urlOf(request.url)?.pathname;
    if (path === undefined) return undefined;
    const parts = path.split('/');
    if (parts.length !== segments.length) return undefined;
    for (let index = 0; index < parts.length; index++) {
      if (index !== at && parts[index] !== segments[index]) return undefined;
    }
    try {
      return decodeURIComponent(parts[at]!);
    } catch {
      return undefined; // a malformed escape names no tenant
    }
  };
}

function urlOf(url: string | undefined): URL | undefined {
  if (url === undefined) return undefined;
  try {
    return new URL(url, RELATIVE_BASE);
  } catch {
    return undefined;
  }
}

function hostnameOf(host: string | undefined): string | undefined {
  if (host === undefined) return undefined;
  const url = urlOf(`http://${host.trim()}/`);
  return url?.hostname.toLowerCase() || undefined;
}

function subdomainOf(host: string | undefined): string | undefined {
  const name = hostnameOf(host);
  if (name === undefined || name.startsWith('[')) return undefined;
  const labels = name.split('.');
  // `example.com` and `localhost` have no subdomain; an IPv4 address is not one either.
  if (labels.length < 3 || labels.every((label) => /^\d+$/.test(label))) return undefined;
  return labels[0];
}

/**
 * The request as `tenant.from` sees it: the adapter's route parameters and URL, and its headers by
 * name. Made only for receivers with `tenant`.
 */
export function tenantRequestOf(input: HandleInput): TenantRequest {
  const { params, url, headers } = input;
  return {
    params: typeof params === 'object' && params !== null ? params : undefined,
    url: typeof url === 'string' ? url : undefined,
    header: (name) => readHeader(headers, name.toLowerCase()),
  };
}

function misconfigured(from: unknown): ConfigurationError {
  let shown: string;
  try {
    shown = JSON.stringify(from) ?? String(from);
  } catch {
    shown = String(from);
  }
  return new ConfigurationError(
    `\`tenant.from\` must be one of { param }, { path }, { header }, { query }, { host: 'subdomain' | 'hostname' }, or a function of the request; got ${shown}.`,
  );
}
