/** What the consent page shows and posts back. */
export interface ConsentRequest {
  client_id: string;
  redirect_uri: string;
  scope: string;
  state: string | undefined;
  /** The user the consent is given as, prefilled and editable. */
  login_hint: string;
}

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char]!);
}

function hidden(name: string, value: string | undefined): string {
  return value === undefined ? '' : `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`;
}

/**
 * The sandbox's consent step: a plain HTML form that POSTs back to `/oauth/authorize` with
 * `decision=approve` or `decision=deny`. A test needs no browser: it posts the same fields itself, or
 * the sandbox runs with `--oauth-auto-approve` and skips the page.
 */
export function renderConsentPage(request: ConsentRequest): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Authorize ${escapeHtml(request.client_id)} (sandbox)</title></head>
<body>
<h1>Authorize ${escapeHtml(request.client_id)}</h1>
<p>This is the service-webhooks sandbox. <strong>${escapeHtml(request.client_id)}</strong> asks for the scopes
<code>${escapeHtml(request.scope)}</code> and will be sent back to <code>${escapeHtml(request.redirect_uri)}</code>.</p>
<form method="post" action="/oauth/authorize">
${hidden('response_type', 'code')}
${hidden('client_id', request.client_id)}
${hidden('redirect_uri', request.redirect_uri)}
${hidden('scope', request.scope)}
${hidden('state', request.state)}
<label>Sign in as (the token's sub; each user has separate data)
<input name="login_hint" value="${escapeHtml(request.login_hint)}"></label>
<button name="decision" value="approve">Approve</button>
<button name="decision" value="deny">Deny</button>
</form>
</body>
</html>
`;
}
