import type { IncomingMessage } from 'node:http';

/** What reading a Node request body found. */
export type NodeBody =
  | { readonly kind: 'body'; readonly body: Uint8Array | string }
  | { readonly kind: 'too_large' }
  | { readonly kind: 'consumed'; readonly parsed: unknown };

type RequestWithBody = IncomingMessage & { body?: unknown; rawBody?: unknown };

const TOO_LARGE: NodeBody = Object.freeze({ kind: 'too_large' });

/**
 * The exact bytes of a Node request, read at most `limit + 1` bytes deep: a body that announces or
 * turns out to be larger is answered 413 without being buffered. A body some middleware already read
 * is used when it kept the bytes (`express.raw`, `bodyParser.text`, a `rawBody` property), and reported
 * as consumed when only a parsed object is left.
 */
export function readNodeBody(request: RequestWithBody, limit: number): Promise<NodeBody> {
  const earlier = request.rawBody ?? request.body;
  if (earlier instanceof Uint8Array || typeof earlier === 'string') {
    return Promise.resolve(tooLarge(earlier, limit) ? TOO_LARGE : { kind: 'body', body: earlier });
  }
  // Only a stream that was read counts as consumed: Express 4's JSON parser sets `req.body = {}` on
  // requests it skips (another content type) without reading them, and those bytes are still there.
  if (request.readableEnded || request.readableDidRead)
    return Promise.resolve({ kind: 'consumed', parsed: earlier });
  const announced = Number(request.headers['content-length']);
  if (announced > limit) return Promise.resolve(TOO_LARGE);

  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const onData = (chunk: Buffer) => {
      length += chunk.length;
      if (length <= limit) {
        chunks.push(chunk);
        return;
      }
      // Stop reading: the bytes so far are dropped and the rest is never buffered.
      request.off('data', onData).pause();
      chunks.length = 0;
      resolve(TOO_LARGE);
    };
    request.on('data', onData);
    // Nothing is removed once the body is read: the request ends here, and its listeners go with it.
    // The error listener stays on purpose, so a late socket error is never an unhandled 'error' event.
    request.on('end', () => {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
      // The listeners (and this array) live as long as the request, which outlives the handlers: drop
      // the chunks so the concatenated body is the only copy held while they run.
      chunks.length = 0;
      resolve({ kind: 'body', body });
    });
    request.on('error', reject);
  });
}

function tooLarge(body: Uint8Array | string, limit: number): boolean {
  return (typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength) > limit;
}
