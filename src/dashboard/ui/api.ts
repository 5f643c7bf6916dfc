import { DEV_TOKEN_HEADER } from '../../dev/report.js';

/** The per-start token the server writes into the page; every API call must carry it. */
export const token: string =
  document.querySelector<HTMLMetaElement>('meta[name="service-webhooks-dev-token"]')?.content ?? '';

export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The server's `{ error: { code, message } }`, so the page can show its words rather than a bare status. */
async function failure(response: Response): Promise<ApiError> {
  const text = await response.text().catch(() => '');
  try {
    const body: unknown = JSON.parse(text);
    if (isRecord(body) && isRecord(body.error) && typeof body.error.message === 'string') {
      const code = typeof body.error.code === 'string' ? body.error.code : undefined;
      return new ApiError(body.error.message, response.status, code);
    }
  } catch {
    // Not JSON (a proxy's page, a crash): fall through to the status line.
  }
  const detail = text.trim().slice(0, 200);
  return new ApiError(
    `${response.status} ${response.statusText}${detail ? `: ${detail}` : ''}`,
    response.status,
    undefined,
  );
}

async function send(method: string, path: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = { [DEV_TOKEN_HEADER]: token, accept: 'application/json' };
  const init: RequestInit = { method, headers };
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response: Response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ApiError(
      `Cannot reach the dev server (${reason}). Is \`service-webhooks dev\` running?`,
      0,
      undefined,
    );
  }
  if (!response.ok) throw await failure(response);
  return response;
}

/** A JSON call to `/_dev/api/*`; the caller names the shape it expects from api-types.ts. */
export async function api<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<T> {
  const response = await send(method, path, body);
  // The body is the contract's shape by agreement with the server, not checked at runtime.
  return (await response.json()) as T;
}

function filenameOf(disposition: string | null, fallback: string): string {
  if (!disposition) return fallback;
  const extended = /filename\*\s*=\s*(?:UTF-8'')?([^;]+)/i.exec(disposition);
  if (extended?.[1]) {
    try {
      return decodeURIComponent(extended[1].trim().replace(/^"|"$/g, ''));
    } catch {
      // A malformed escape: the plain filename parameter may still be usable.
    }
  }
  const plain = /filename\s*=\s*"?([^";]+)"?/i.exec(disposition);
  return plain?.[1]?.trim() || fallback;
}

/**
 * Downloads an attachment. A plain link cannot carry the token header, so the file is fetched and handed
 * to the browser as a Blob under the server's filename.
 */
export async function download(path: string, fallbackName: string): Promise<string> {
  const response = await send('GET', path);
  const name = filenameOf(response.headers.get('content-disposition'), fallbackName);
  const url = URL.createObjectURL(await response.blob());
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  // Revoked later: some browsers read the Blob after click() returns.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  return name;
}

export function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
