/**
 * A small OAuth 2.0 client for the tests, written as an integration would be: `fetch` only, following
 * the authorization-code flow against the sandbox's authorization server.
 */

/** One registered client, as the app knows it. */
export interface ClientConfig {
  authUrl: string;
  clientId: string;
  clientSecret: string;
  redirectUri: string;
}

/** What the token endpoint answered. */
export interface TokenAnswer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** The token endpoint's success body (RFC 6749 §5.1). */
export interface Tokens {
  access_token: string;
  token_type: string;
  expires_in: number;
  refresh_token: string;
  scope: string;
}

/** The address the app sends the user to. */
export function authorizeUrl(
  config: ClientConfig,
  params: { scope?: string; state?: string; loginHint?: string; responseType?: string } = {},
): string {
  const query = new URLSearchParams({
    client_id: config.clientId,
    redirect_uri: config.redirectUri,
    response_type: params.responseType ?? 'code',
  });
  if (params.scope !== undefined) query.set('scope', params.scope);
  if (params.state !== undefined) query.set('state', params.state);
  if (params.loginHint !== undefined) query.set('login_hint', params.loginHint);
  return `${config.authUrl}/oauth/authorize?${query}`;
}

const ENTITIES: Readonly<Record<string, string>> = {
  '&amp;': '&',
  '&lt;': '<',
  '&gt;': '>',
  '&quot;': '"',
  '&#39;': "'",
};

/** The named fields of the consent page's form, as a browser would post them. */
export function formFields(html: string): URLSearchParams {
  const fields = new URLSearchParams();
  for (const match of html.matchAll(/<input(?: type="hidden")? name="([^"]+)" value="([^"]*)">/g)) {
    fields.set(
      match[1]!,
      match[2]!.replace(/&(amp|lt|gt|quot|#39);/g, (entity) => ENTITIES[entity]!),
    );
  }
  return fields;
}

/**
 * Walk the user's part without a browser: open the consent page, post its form with `decision`, and
 * answer where the sandbox redirected to (the app's redirect URI with `code` and `state`, or `error`).
 */
export async function consent(
  url: string,
  decision: 'approve' | 'deny' = 'approve',
  loginHint?: string,
): Promise<URL> {
  const page = await fetch(url, { redirect: 'manual' });
  if (page.status !== 200) throw new Error(`consent page answered ${page.status}: ${await page.text()}`);
  const fields = formFields(await page.text());
  fields.set('decision', decision);
  if (loginHint !== undefined) fields.set('login_hint', loginHint);
  const posted = await fetch(new URL('/oauth/authorize', url), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: fields,
    redirect: 'manual',
  });
  const location = posted.headers.get('location');
  if (posted.status !== 303 || location === null) {
    throw new Error(`consent answered ${posted.status}: ${await posted.text()}`);
  }
  return new URL(location);
}

/** POST a form to the token endpoint. */
export async function tokenRequest(
  authUrl: string,
  form: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<TokenAnswer> {
  const response = await fetch(`${authUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, unknown>,
  };
}

/** Exchange an authorization code, authenticating with client_id and client_secret in the body. */
export function exchangeCode(config: ClientConfig, code: string, redirectUri = config.redirectUri) {
  return tokenRequest(config.authUrl, {
    grant_type: 'authorization_code',
    code,
    redirect_uri: redirectUri,
    client_id: config.clientId,
    client_secret: config.clientSecret,
  });
}

/** Refresh, as the spec shows it: grant_type and refresh_token only. */
export function refresh(config: ClientConfig, refreshToken: string, extra: Record<string, string> = {}) {
  return tokenRequest(config.authUrl, { grant_type: 'refresh_token', refresh_token: refreshToken, ...extra });
}

/** Consent (approved) and exchange in one go; answers the tokens. */
export async function signIn(
  config: ClientConfig,
  params: { scope?: string; loginHint?: string } = {},
): Promise<Tokens> {
  const redirected = await consent(authorizeUrl(config, { ...params, state: 'xyz' }), 'approve');
  const code = redirected.searchParams.get('code');
  if (code === null) throw new Error(`no code in ${redirected}`);
  const answer = await exchangeCode(config, code);
  if (answer.status !== 200)
    throw new Error(`code exchange answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return answer.body as unknown as Tokens;
}

/** The claims of a JWT, unverified (for looking at what the sandbox issued). */
export function claimsOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as Record<
    string,
    unknown
  >;
}

/** A JSON API call with a Bearer credential (API key or access token). */
export async function call(
  base: string,
  method: string,
  path: string,
  credential: string,
  body?: unknown,
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>),
  };
}
