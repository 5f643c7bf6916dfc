import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError, authError, requestError } from '../api-errors.js';
import { readBodyText, redirect, sendHtml, sendJson } from '../http-io.js';
import { formatScope, parseScope } from '../scopes.js';
import type { AuthorizationCodes } from './authorization-codes.js';
import { type OAuthClient, secretMatches } from './clients.js';
import { renderConsentPage } from './consent-page.js';
import type { TokenIssuer, TokenResponse } from './token-issuer.js';

/** What the authorization server works with. */
export interface OAuthServerOptions {
  /** Registered clients by `client_id`. */
  clients: ReadonlyMap<string, OAuthClient>;
  codes: AuthorizationCodes;
  tokens: TokenIssuer;
  /** Skip the consent page: `GET /oauth/authorize` redirects with a code at once. */
  autoApprove: boolean;
}

/** Answers one request under `/oauth/`; resolves to the status written. */
export type OAuthHandler = (request: IncomingMessage, response: ServerResponse, url: URL) => Promise<number>;

// The user a consent is given as: the token's `sub`, so also the name of the account the token sees.
const LOGIN_HINT = /^[A-Za-z0-9_.@:+-]{1,100}$/;

const invalidRequest = (message: string) => authError(400, 'invalid_request', message);
const invalidClient = (message: string) =>
  authError(401, 'invalid_client', message, { 'www-authenticate': 'Basic realm="service-webhooks sandbox"' });
const invalidGrant = (message: string) => authError(400, 'invalid_grant', message);

/** One value of `name`; empty counts as absent and a repeat is an error (RFC 6749 §3.1). */
function single(params: URLSearchParams, name: string): string | undefined {
  const values = params.getAll(name);
  if (values.length > 1) throw invalidRequest(`${name} is given more than once.`);
  return values[0] === '' ? undefined : values[0];
}

function required(params: URLSearchParams, name: string): string {
  const value = single(params, name);
  if (value === undefined) throw invalidRequest(`${name} is required.`);
  return value;
}

async function readForm(request: IncomingMessage): Promise<URLSearchParams> {
  const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw invalidRequest('The body must be form-encoded (Content-Type: application/x-www-form-urlencoded).');
  }
  return new URLSearchParams(await readBodyText(request));
}

function withParams(uri: string, params: Readonly<Record<string, string | undefined>>): string {
  const url = new URL(uri);
  for (const [name, value] of Object.entries(params))
    if (value !== undefined) url.searchParams.set(name, value);
  return url.toString();
}

/** `client_id` and `client_secret` from HTTP Basic (RFC 6749 §2.3.1) or the body; `undefined` when neither. */
function clientCredentials(
  request: IncomingMessage,
  form: URLSearchParams,
): { id: string; secret: string } | undefined {
  const header = request.headers.authorization;
  const bodyId = single(form, 'client_id');
  const bodySecret = single(form, 'client_secret');
  if (header?.startsWith('Basic ')) {
    if (bodySecret !== undefined) {
      throw invalidRequest(
        'Authenticate the client one way: HTTP Basic or client_secret in the body, not both.',
      );
    }
    const decoded = Buffer.from(header.slice('Basic '.length), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw invalidClient('The Basic credentials must be client_id:client_secret.');
    let id: string;
    let secret: string;
    try {
      // The id and secret are form-encoded before Basic encoding (RFC 6749 §2.3.1).
      id = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' '));
      secret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' '));
    } catch {
      throw invalidClient('The Basic credentials are not form-encoded.');
    }
    if (bodyId !== undefined && bodyId !== id)
      throw invalidClient('client_id differs from the Basic credentials.');
    return { id, secret };
  }
  if (bodyId === undefined && bodySecret === undefined) return undefined;
  if (bodyId === undefined || bodySecret === undefined) {
    throw invalidClient('Send both client_id and client_secret (or HTTP Basic).');
  }
  return { id: bodyId, secret: bodySecret };
}

/**
 * The authorization server on the sandbox's own origin (the spec's `{auth_url}`): the
 * authorization-code flow of RFC 6749 §4.1 and the refresh of §6, answering RFC 6749's field names.
 * Errors the client reads as JSON use shape A with RFC 6749's lower-case codes (`invalid_request`,
 * `invalid_client`, `invalid_grant`, `unsupported_grant_type`, `invalid_scope`); errors the user's
 * browser carries back to the client are redirect parameters (`error`, `error_description`, `state`).
 */
export function createOAuthHandler(options: OAuthServerOptions): OAuthHandler {
  const { clients, codes, tokens, autoApprove } = options;

  function authenticateClient(credentials: { id: string; secret: string }): OAuthClient {
    const client = clients.get(credentials.id);
    if (client === undefined || !secretMatches(client, credentials.secret)) {
      throw invalidClient('Unknown client or wrong client_secret.');
    }
    return client;
  }

  async function authorize(request: IncomingMessage, response: ServerResponse, url: URL): Promise<number> {
    const isPost = request.method === 'POST';
    const params = isPost ? await readForm(request) : url.searchParams;
    // Until client and redirect URI are known good, errors are shown here, never redirected (§4.1.2.1).
    const clientId = required(params, 'client_id');
    const client = clients.get(clientId);
    if (client === undefined) {
      throw authError(
        400,
        'invalid_client',
        clients.size === 0
          ? 'No OAuth clients are registered: start the sandbox with --oauth-client ID:SECRET:REDIRECT_URI.'
          : `Unknown client_id ${clientId}.`,
      );
    }
    const redirectUri = required(params, 'redirect_uri');
    if (!client.redirect_uris.includes(redirectUri)) {
      throw invalidRequest(`redirect_uri ${redirectUri} is not registered for ${clientId}.`);
    }
    const state = single(params, 'state');
    const status = isPost ? 303 : 302;
    const fail = (error: string, description: string): number => {
      redirect(response, status, withParams(redirectUri, { error, error_description: description, state }));
      return status;
    };
    const responseType = single(params, 'response_type');
    if (responseType !== 'code') {
      return responseType === undefined
        ? fail('invalid_request', 'response_type is required (code)')
        : fail('unsupported_response_type', 'only response_type=code is supported');
    }
    // An absent scope means read, the least a token can do.
    const scopes = parseScope(single(params, 'scope') ?? 'read');
    if (scopes === undefined || scopes.length === 0)
      return fail('invalid_scope', 'scope must be read, write or both');
    const scope = formatScope(scopes);
    const sub = single(params, 'login_hint') ?? `user@${clientId}`;
    if (!LOGIN_HINT.test(sub))
      return fail('invalid_request', 'login_hint must be 1 to 100 letters, digits or _.@:+-');

    if (!isPost && !autoApprove) {
      sendHtml(
        response,
        renderConsentPage({ client_id: clientId, redirect_uri: redirectUri, scope, state, login_hint: sub }),
      );
      return 200;
    }
    if (isPost) {
      const decision = single(params, 'decision');
      if (decision === 'deny') return fail('access_denied', 'the user denied the request');
      if (decision !== 'approve') throw invalidRequest('decision must be approve or deny.');
    }
    const code = codes.issue({ client_id: clientId, redirect_uri: redirectUri, scope, sub });
    redirect(response, status, withParams(redirectUri, { code, state }));
    return status;
  }

  function exchangeCode(request: IncomingMessage, form: URLSearchParams): TokenResponse {
    const credentials = clientCredentials(request, form);
    if (credentials === undefined) {
      throw invalidClient('The code exchange needs client_id and client_secret (or HTTP Basic).');
    }
    const client = authenticateClient(credentials);
    const code = required(form, 'code');
    const redirectUri = required(form, 'redirect_uri');
    const redemption = codes.redeem(code, { client_id: client.client_id, redirect_uri: redirectUri });
    if (redemption.ok) {
      const { grant } = redemption;
      return tokens.issue(client.client_id, grant.sub, grant.scope, grant.grant_id);
    }
    switch (redemption.reason) {
      case 'used':
        // A replayed code may be stolen: revoke what the first exchange led to (RFC 6749 §4.1.2).
        tokens.revokeGrant(redemption.grantId);
        throw invalidGrant(
          'The code was already used (codes are single-use); every token issued from it is revoked.',
        );
      case 'expired':
        throw invalidGrant('The code expired; authorize again.');
      case 'client':
        throw invalidGrant('The code was issued to another client.');
      case 'redirect_uri':
        throw invalidGrant('redirect_uri differs from the one of the authorization request.');
      case 'unknown':
        throw invalidGrant('Unknown authorization code.');
    }
  }

  async function token(request: IncomingMessage, response: ServerResponse): Promise<number> {
    const form = await readForm(request);
    const grantType = single(form, 'grant_type');
    let body: TokenResponse;
    if (grantType === 'authorization_code') {
      body = exchangeCode(request, form);
    } else if (grantType === 'refresh_token') {
      // The spec's refresh sends only grant_type and refresh_token; a client that authenticates anyway
      // must be the one the token was issued to.
      const credentials = clientCredentials(request, form);
      const clientId = credentials === undefined ? undefined : authenticateClient(credentials).client_id;
      body = tokens.refresh(required(form, 'refresh_token'), clientId, single(form, 'scope'));
    } else if (grantType === undefined) {
      throw invalidRequest('grant_type is required (authorization_code or refresh_token).');
    } else {
      throw authError(400, 'unsupported_grant_type', `grant_type ${grantType} is not supported.`);
    }
    sendJson(response, 200, body, { 'cache-control': 'no-store', pragma: 'no-cache' });
    return 200;
  }

  return async (request, response, url) => {
    const method = request.method ?? 'GET';
    try {
      if (url.pathname === '/oauth/authorize') {
        if (method === 'GET' || method === 'POST') return await authorize(request, response, url);
        throw new ApiError(
          405,
          { error: { code: 'method_not_allowed', message: 'Use GET, POST.' } },
          { allow: 'GET, POST' },
        );
      }
      if (url.pathname === '/oauth/token') {
        if (method === 'POST') return await token(request, response);
        throw new ApiError(
          405,
          { error: { code: 'method_not_allowed', message: 'Use POST.' } },
          { allow: 'POST' },
        );
      }
      throw requestError(404, 'not_found', 'The authorization server has /oauth/authorize and /oauth/token.');
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      sendJson(response, error.status, error.body, error.headers);
      return error.status;
    }
  };
}
