import type { BodyBudget } from 'service-webhooks';

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
  if (Number(request.headers.get('content-length')) > limit) {
    // Refuse before reading a byte; cancelling tells the runtime it may drop the rest of the upload.
    void request.body?.cancel().catch(() => {});
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
        // Not awaited: some runtimes settle cancel() only once the peer is gone, and the answer must not wait.
        void reader.cancel().catch(() => {});
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
