import type { IncomingMessage } from 'node:http';

/** What reading a Node request body found. */
export type NodeBody =
  | { readonly kind: 'body'; readonly body: Uint8Array | string }
  | { readonly kind: 'too_large' }
  | { readonly kind: 'consumed'; readonly parsed: unknown };

type RequestWithBody = IncomingMessage & { body?: unknown; rawBody?: unknown };

/**
 * The exact bytes of a Node request, read at most `limit + 1` bytes deep: a body that announces or
 * turns out to be larger is answered 413 without being buffered. A body some middleware already read
 * is used when it kept the bytes (`express.raw`, `bodyParser.text`, a `rawBody` property), and reported
 * as consumed when only a parsed object is left.
 */
export function readNodeBody(request: RequestWithBody, limit: number): Promise<NodeBody> {
  const earlier = request.rawBody ?? request.body;
  if (earlier instanceof Uint8Array || typeof earlier === 'string') {
    return Promise.resolve(
      tooLarge(earlier, limit) ? { kind: 'too_large' } : { kind: 'body', body: earlier },
    );
  }
  // Only a stream that was read counts as consumed: Express 4's JSON parser sets `req.body = {}` on
  // requests it skips (another content type) without reading them, and those bytes are still there.
  if (request.readableEnded || request.readableDidRead)
    return Promise.resolve({ kind: 'consumed', parsed: earlier });
  const announced = Number(request.headers['content-length']);
  if (announced > limit) return Promise.resolve({ kind: 'too_large' });

  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const onData = (chunk: Buffer) => {
      length += chunk.length;
      if (length > limit) {
        cleanup();
        request.pause();
        resolve({ kind: 'too_large' });
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve({ kind: 'body', body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length) });
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const cleanup = () => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
    };
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onError);
  });
}

function tooLarge(body: Uint8Array | string, limit: number): boolean {
  return (typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength) > limit;
}
