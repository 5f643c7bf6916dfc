/**
 * The bytes of request bodies the adapters may hold while reading, shared by every delivery of one
 * receiver. Adapters take each chunk's bytes before keeping it and give them all back when the read
 * ends, however it ends; a chunk that does not fit means the delivery is answered 503 `receiver_busy`.
 *
 * Why a budget and not a count of connections: a count would let a few huge uploads, or many stalled
 * ones, hold memory without bound; bytes are what a slow sender makes a server keep.
 *
 * @example
 * ```ts
 * if (!webhooks.bodyBudget.take(chunk.byteLength)) return webhooks.reject(new ReceiverBusyError());
 * // ... once the body is read, or the read failed:
 * webhooks.bodyBudget.give(bytesTaken);
 * ```
 */
export interface BodyBudget {
  /** Take `bytes` if they fit; answers false, taking nothing, when they do not. */
  take(bytes: number): boolean;
  /** Give back bytes taken earlier. */
  give(bytes: number): void;
  /** Bytes taken now, over all reads in flight. */
  readonly inUse: number;
  /** The bound, `maxBodyBytesInFlight`. */
  readonly limit: number;
}

/** The budget of one receiver. */
export class ByteBudget implements BodyBudget {
  readonly limit: number;
  #inUse = 0;

  constructor(limit: number) {
    this.limit = limit;
  }

  get inUse(): number {
    return this.#inUse;
  }

  take(bytes: number): boolean {
    if (this.#inUse + bytes > this.limit) return false;
    this.#inUse += bytes;
    return true;
  }

  give(bytes: number): void {
    // Never below zero: a double give is a bug in an adapter, and must not widen the bound for ever.
    this.#inUse = Math.max(0, this.#inUse - bytes);
  }
}
