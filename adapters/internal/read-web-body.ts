import type { BodyBudget } from 'service-webhooks/core';

/** What reading a Fetch `Request` body found (`busy`: a chunk did not fit in the receiver's budget). */
export type WebBody =
  | { readonly kind: 'body'; readonly body: Uint8Array }
  | { readonly kind: 'too_large' }
  | { readonly kind: 'busy' };

const TOO_LARGE: WebBody = Object.freeze({ kind: 'too_large' });
const BUSY: WebBody = Object.freeze({ kind: 'busy' });

/**
 * The exact bytes of a Fetch `Request`, read at most `limit + 1` bytes deep: a body that announces
 * (Content-Length) or turns out (chunked, or a lying Content-Length) to be larger is answered
 * `too_large` without being buffered, and the rest of the stream is cancelled. Each chunk's bytes are
 * taken from `budget` before the chunk is kept (`busy`, and the stream cancelled, when they do not
 * fit), and all of them are given back once the read ends, however it ends. Web APIs only, no
 * `node:*` and no `Buffer`, so it runs on edge runtimes.
 *
 * Callers check `request.bodyUsed` first: a body another middleware already read is gone, and reading
 * it here throws the platform's TypeError.
 *
 * @example
 * ```ts
 * const read = await readWebBody(request, webhooks.maxBodyBytes, webhooks.bodyBudget);
 * if (read.kind === 'too_large') return webhooks.reject(new PayloadTooLargeError());
 * if (read.kind === 'busy') return webhooks.reject(new ReceiverBusyError());
 * ```
 */
export async function readWebBody(request: Request, limit: number, budget: BodyBudget): Promise<WebBody> {
  const announced = Number(request.headers.get('content-length'));
  if (announced > limit) {
    // Refuse before keeping a byte. A body small enough to drain is read and dropped so that the 413
    // reaches the sender (see discardRest); a larger one is cancelled unread.
    if (request.body !== null && announced <= DRAIN_BYTES) await discardRest(request.body.getReader(), 0);
    else void request.body?.cancel().catch(() => {});
    return TOO_LARGE;
  }
  if (request.body === null) return { kind: 'body', body: new Uint8Array(0) };

  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      // The size limit first: a body too large is 413 whatever the load.
      let refused: WebBody | undefined;
      if (length + value.byteLength > limit) refused = TOO_LARGE;
      else if (!budget.take(value.byteLength)) refused = BUSY;
      if (refused !== undefined) {
        // Nothing more is kept (the budget is not taken): the rest is only read so the answer arrives.
        await discardRest(reader, value.byteLength);
        return refused;
      }
      length += value.byteLength;
      chunks.push(value);
    }
  } finally {
    // `length` is exactly what was taken: given back on the whole body, a refusal, or a read that threw.
    budget.give(length);
  }
  if (chunks.length === 1) return { kind: 'body', body: chunks[0]! };
  const body = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return { kind: 'body', body };
}

/** How much of a refused body is read and dropped, at most, before the rest is cancelled. */
const DRAIN_BYTES = 1024 * 1024;
/** How long a refused body is read and dropped, at most: a slow sender does not keep the request open. */
const DRAIN_MS = 2_000;

/**
 * Read and drop the rest of a refused body (up to DRAIN_BYTES more, within DRAIN_MS), then cancel what
 * is left. A server that closes the connection with request bytes unread makes the kernel reset it,
 * and a sender still writing its body gets ECONNRESET instead of the answer: workerd (Cloudflare
 * Workers, wrangler dev, miniflare) does so when the body is cancelled, and a proxy in front of it
 * (wrangler dev's) then answers 500 "Network connection lost". Node, Bun and Deno drain by themselves.
 * Not awaited on cancel(): some runtimes settle it only once the peer is gone.
 */
async function discardRest(reader: ReadableStreamDefaultReader<Uint8Array>, dropped: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeUp = new Promise<'time_up'>((resolve) => {
    timer = setTimeout(() => resolve('time_up'), DRAIN_MS);
  });
  try {
    while (dropped <= DRAIN_BYTES) {
      const next = await Promise.race([reader.read(), timeUp]);
      if (next === 'time_up') break;
      if (next.done) return;
      dropped += next.value.byteLength;
    }
  } catch {
    return; // the sender went away: no one is left to answer
  } finally {
    clearTimeout(timer);
  }
  void reader.cancel().catch(() => {});
}
