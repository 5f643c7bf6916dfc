import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type { BodyBudget } from 'service-webhooks';

/** What reading a Node body stream found. */
export type StreamBody =
  | { readonly kind: 'body'; readonly body: Uint8Array | string }
  | { readonly kind: 'too_large' }
  /** The chunk did not fit in the receiver's `bodyBudget`: answer 503 `receiver_busy`. */
  | { readonly kind: 'busy' }
  /** The client went away mid-body (reset, or the stream closed before its end): nobody to answer. */
  | { readonly kind: 'aborted' };

/** What reading a Node request body found. */
export type NodeBody = StreamBody | { readonly kind: 'consumed'; readonly parsed: unknown };

type RequestWithBody = IncomingMessage & { body?: unknown; rawBody?: unknown };

const TOO_LARGE: StreamBody = Object.freeze({ kind: 'too_large' });
const BUSY: StreamBody = Object.freeze({ kind: 'busy' });
const ABORTED: StreamBody = Object.freeze({ kind: 'aborted' });

/**
 * The exact bytes of a Node request, read at most `limit + 1` bytes deep: a body that announces or
 * turns out to be larger is answered 413 without being buffered. A body some middleware already read
 * is used when it kept the bytes (`express.raw`, `bodyParser.text`, a `rawBody` property), and reported
 * as consumed when only a parsed object is left. Only bytes read here count against `budget`: a body
 * already buffered is not being read.
 */
export function readNodeBody(request: RequestWithBody, limit: number, budget: BodyBudget): Promise<NodeBody> {
  const earlier = request.rawBody ?? request.body;
  if (earlier instanceof Uint8Array || typeof earlier === 'string') {
    return Promise.resolve(tooLarge(earlier, limit) ? TOO_LARGE : { kind: 'body', body: earlier });
  }
  // Only a stream that was read counts as consumed: Express 4's JSON parser sets `req.body = {}` on
  // requests it skips (another content type) without reading them, and those bytes are still there.
  if (request.readableEnded || request.readableDidRead)
    return Promise.resolve({ kind: 'consumed', parsed: earlier });
  return readNodeStream(request, request.headers['content-length'], limit, budget);
}

/**
 * Read a body stream (a Node request, or the payload stream Fastify hands a content-type parser)
 * within `limit` bytes and the receiver's `budget`: each chunk's bytes are taken before it is kept,
 * and everything taken is given back once, however the read ends (the whole body, too large, busy,
 * a client that went away, a stream error). Reading stops at the first chunk that does not fit.
 *
 * A client that went away is recognised by Node's `ECONNRESET` (what an `IncomingMessage` errors with
 * when its socket closes mid-body, whether the peer reset it or a server timeout destroyed it) or by
 * the stream closing before its end; any other stream error rejects.
 */
export function readNodeStream(
  stream: Readable,
  announced: string | undefined,
  limit: number,
  budget: BodyBudget,
): Promise<StreamBody> {
  if (Number(announced) > limit) return Promise.resolve(TOO_LARGE);

  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    // Bytes kept, all taken from the budget; -1 once given back, so the read settles only once.
    let held = 0;
    const onData = (chunk: Buffer) => {
      const kept = held + chunk.length;
      // The size limit first: a body too large is 413 whatever the load.
      let refused: StreamBody | undefined;
      if (kept > limit) refused = TOO_LARGE;
      else if (!budget.take(chunk.length)) refused = BUSY;
      if (refused === undefined) {
        held = kept;
        chunks.push(chunk);
        return;
      }
      // Stop reading: the bytes so far are dropped and the rest is never buffered.
      stream.off('data', onData).pause();
      budget.give(held);
      held = -1;
      chunks.length = 0;
      resolve(refused);
    };
    // One listener for 'end', 'error' and 'close': whichever comes first settles the read. They stay
    // attached on purpose (the stream ends here, and they go with it), so a late socket error is never
    // an unhandled 'error' event.
    const onStop = (error?: Error) => {
      if (held < 0) return;
      budget.give(held);
      if (error !== undefined && (error as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(error);
      else if (!stream.readableEnded) resolve(ABORTED);
      else resolve({ kind: 'body', body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, held) });
      held = -1;
      // The listeners (and this array) live as long as the request, which outlives the handlers: drop
      // the chunks so the concatenated body is the only copy held while they run.
      chunks.length = 0;
    };
    stream.on('data', onData);
    stream.on('end', onStop);
    stream.on('error', onStop);
    stream.on('close', onStop);
  });
}

function tooLarge(body: Uint8Array | string, limit: number): boolean {
  return (typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength) > limit;
}
