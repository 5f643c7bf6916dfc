import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type { BodyBudget } from 'service-webhooks/core';

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

/**
 * Called once, Node style, with what the read found or with a stream error. The shape of Fastify's
 * content-type parser `done`, so the Fastify route passes its own and no wrapper is made per request.
 */
export type ReadDone<T> = (error: Error | null, read?: T) => void;

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
export function readNodeBody(
  request: RequestWithBody,
  limit: number,
  budget: BodyBudget,
  done: ReadDone<NodeBody>,
): void {
  const earlier = request.rawBody ?? request.body;
  if (earlier instanceof Uint8Array || typeof earlier === 'string') {
    done(null, tooLarge(earlier, limit) ? TOO_LARGE : { kind: 'body', body: earlier });
    return;
  }
  // Only a stream that was read counts as consumed: Express 4's JSON parser sets `req.body = {}` on
  // requests it skips (another content type) without reading them, and those bytes are still there.
  if (request.readableEnded || request.readableDidRead) done(null, { kind: 'consumed', parsed: earlier });
  else readNodeStream(request, request.headers['content-length'], limit, budget, done);
}

/**
 * Read a body stream (a Node request, or the payload stream Fastify hands a content-type parser)
 * within `limit` bytes and the receiver's `budget`: each chunk's bytes are taken before it is kept,
 * and everything taken is given back once, however the read ends (the whole body, too large, busy,
 * a client that went away, a stream error). Reading stops at the first chunk that does not fit.
 *
 * A client that went away is recognised by Node's `ECONNRESET` (what an `IncomingMessage` errors with
 * when its socket closes mid-body, whether the peer reset it or a server timeout destroyed it) or by
 * the stream closing before its end; any other stream error is passed to `done`.
 *
 * Callbacks rather than a promise: under load the promise, its two resolvers and the await that read
 * it cost more than the rest of the reader (they are what a hand-written route does without).
 */
export function readNodeStream(
  stream: Readable,
  announced: string | undefined,
  limit: number,
  budget: BodyBudget,
  done: ReadDone<StreamBody>,
): void {
  if (Number(announced) > limit) {
    done(null, TOO_LARGE);
    return;
  }

  // The common body, one chunk, is kept alone: no array, and no copy.
  let first: Buffer | undefined;
  let chunks: Buffer[] | undefined;
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
      if (first === undefined) first = chunk;
      else if (chunks === undefined) chunks = [first, chunk];
      else chunks.push(chunk);
      return;
    }
    // Stop reading: the bytes so far are dropped and the rest is never buffered.
    stream.off('data', onData).pause();
    budget.give(held);
    held = -1;
    first = chunks = undefined;
    done(null, refused);
  };
  // One listener for 'end', 'error' and 'close': whichever comes first settles the read. They stay
  // attached on purpose (the stream ends here, and they go with it), so a late socket error is never
  // an unhandled 'error' event.
  const onStop = (error?: Error) => {
    if (held < 0) return;
    budget.give(held);
    const bytes = held;
    held = -1;
    // The listeners live as long as the request, which outlives the handlers: they let go of the
    // chunks so the body handed on is the only copy held while the handlers run.
    const body = chunks === undefined ? first : Buffer.concat(chunks, bytes);
    first = chunks = undefined;
    if (error !== undefined && (error as NodeJS.ErrnoException).code !== 'ECONNRESET') done(error);
    else if (!stream.readableEnded) done(null, ABORTED);
    else done(null, { kind: 'body', body: body ?? EMPTY });
  };
  stream.on('data', onData);
  stream.on('end', onStop);
  stream.on('error', onStop);
  stream.on('close', onStop);
}

// Shared: zero bytes cannot be changed. A Uint8Array, not a Buffer, made at load: the Next.js adapter
// carries this module for the pages router, and an edge runtime without Buffer loads it too.
const EMPTY = new Uint8Array(0);

function tooLarge(body: Uint8Array | string, limit: number): boolean {
  return (typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength) > limit;
}
