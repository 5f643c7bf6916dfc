import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

/** The placeholder in index.html that the per-start token replaces. */
export const TOKEN_PLACEHOLDER = '__SERVICE_WEBHOOKS_DEV_TOKEN__';

const TYPES: Readonly<Record<string, string>> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
};

/**
 * The dashboard's built page is not where the CLI looks for it: a clone of the repository that was
 * never built. Its message says what to run.
 *
 * @example
 * ```ts
 * await StaticAssets.load('dist/dashboard', token).catch((error) => {
 *   if (error instanceof DashboardPageMissingError) console.error(error.message);
 * });
 * ```
 */
export class DashboardPageMissingError extends Error {
  override name = 'DashboardPageMissingError';
  readonly code = 'dashboard_page_missing';
}

interface Asset {
  readonly type: string;
  readonly raw: Buffer;
  readonly gzip: Buffer;
  readonly etag: string;
}

/**
 * The page's headers. The content-security policy lets the page load only its own script and style
 * and talk only to its own origin; `frame-ancestors 'none'` keeps another site from framing it and
 * tricking a click on "Replay".
 */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

/**
 * The dashboard's page, read once from the folder the build wrote (`dist/dashboard`), compressed once,
 * and served from memory: no build step at run time, no file read per request.
 */
export class StaticAssets {
  readonly #assets: ReadonlyMap<string, Asset>;

  private constructor(assets: ReadonlyMap<string, Asset>) {
    this.#assets = assets;
  }

  /**
   * Read the page from `folder`, with `token` written into index.html. Throws with what to do when the
   * folder lacks the built page.
   */
  static async load(folder: string, token: string): Promise<StaticAssets> {
    const assets = new Map<string, Asset>();
    for (const [name, type] of Object.entries(TYPES)) {
      let raw: Buffer;
      try {
        raw = await readFile(join(folder, name));
      } catch (error) {
        throw new DashboardPageMissingError(
          `The dashboard's page is missing (${join(folder, name)}: ${(error as NodeJS.ErrnoException).code}); from a clone of the repository, run npm run build first.`,
        );
      }
      if (name === 'index.html') raw = Buffer.from(raw.toString('utf8').replaceAll(TOKEN_PLACEHOLDER, token));
      const etag = `"${createHash('sha256').update(raw).digest('base64url').slice(0, 16)}"`;
      assets.set(`/${name}`, { type, raw, gzip: gzipSync(raw, { level: 9 }), etag });
    }
    assets.set('/', assets.get('/index.html')!);
    return new StaticAssets(assets);
  }

  /** Whether `pathname` is one of the page's files. */
  has(pathname: string): boolean {
    return this.#assets.has(pathname);
  }

  /** Send the file at `pathname` (which {@link StaticAssets.has}), gzipped when the client accepts it. */
  serve(request: IncomingMessage, response: ServerResponse, pathname: string): number {
    const asset = this.#assets.get(pathname)!;
    const headers: Record<string, string> = {
      ...SECURITY_HEADERS,
      'content-type': asset.type,
      etag: asset.etag,
      vary: 'accept-encoding',
      // index.html carries this start's token: never kept by a cache.
      'cache-control': asset.type.startsWith('text/html') ? 'no-store' : 'no-cache',
    };
    if (request.headers['if-none-match'] === asset.etag) {
      response.writeHead(304, headers).end();
      return 304;
    }
    const gzip = /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''));
    const body = gzip ? asset.gzip : asset.raw;
    if (gzip) headers['content-encoding'] = 'gzip';
    headers['content-length'] = String(body.length);
    response.writeHead(200, headers);
    response.end(request.method === 'HEAD' ? undefined : body);
    return 200;
  }

  /** Each file's size, raw and gzipped, for the build's budget and the closing note. */
  sizes(): { name: string; raw: number; gzip: number }[] {
    return Object.keys(TYPES).map((name) => {
      const asset = this.#assets.get(`/${name}`)!;
      return { name, raw: asset.raw.length, gzip: asset.gzip.length };
    });
  }
}
