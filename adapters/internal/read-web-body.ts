/** What reading a Fetch `Request` body found. */
export type WebBody = { readonly kind: 'body'; readonly body: Uint8Array } | { readonly kind: 'too_large' };

/**
 * The exact bytes of a Fetch `Request`, read at most `limit + 1` bytes deep: a body that announces
 * (Content-Length) or turns out (chunked, or a lying Content-Length) to be larger is answered
 * `too_large` without being buffered, and the rest of the stream is cancelled. Web APIs only, no
 * `node:*` and no `Buffer`, so it runs on edge runtimes.
 *
 * Callers check `request.bodyUsed` first: a body another middleware already read is gone, and reading
 * it here throws the platform's TypeError.
 *
 * @example
 * ```ts
 * const read = await readWebBody(request, webhooks.maxBodyBytes);
 * if (read.kind === 'too_large') return webhooks.reject(new PayloadTooLargeError());
 * ```
 */
export async function readWebBody(request: Request, limit: number): Promise<WebBody> {
  if (Number(request.headers.get('content-length')) > limit) {
    // Refuse before reading a byte; cancelling tells the runtime it may drop the rest of the upload.
    void request.body?.cancel().catch(() => {});
    return { kind: 'too_large' };
  }
  if (request.body === null) return { kind: 'body', body: new Uint8Array(0) };

  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    length += value.byteLength;
    if (length > limit) {
      // Not awaited: some runtimes settle cancel() only once the peer is gone, and the 413 must not wait.
      void reader.cancel().catch(() => {});
      return { kind: 'too_large' };
    }
    chunks.push(value);
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
