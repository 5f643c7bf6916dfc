/** What the RabbitMQ inbox refuses, as a typed error with a stable `code`. */

/**
 * The broker did not take a message for written: the door answers the sender 503
 * `inbox_unavailable` with this error as the cause (the sender retries later), and a worker leaves the
 * delivery it was settling to come back.
 *
 * - `returned`: the broker returned the message (`basic.return` of a `mandatory` publish): no queue of
 *   that name is bound, so nothing would hold the event.
 * - `nacked`: the broker refused it (`basic.nack`): the queue could not take it.
 * - `unconfirmed`: no confirm came within the deadline (a broker under memory or disk alarm blocks
 *   publishers; a connection that hangs).
 * - `closed`: the channel or connection closed before the confirm.
 *
 * @example
 * ```ts
 * webhooks.onError((error) => {
 *   if (error.cause instanceof RabbitMQPublishError && error.cause.code === 'returned') alert(`no queue ${error.cause.queue}`);
 * });
 * ```
 */
export class RabbitMQPublishError extends Error {
  override name = 'RabbitMQPublishError';
  readonly code: 'returned' | 'nacked' | 'unconfirmed' | 'closed';
  /** The queue the message was for. */
  readonly queue: string;

  constructor(code: RabbitMQPublishError['code'], queue: string, timeoutMs?: number, cause?: unknown) {
    super(
      {
        returned: `RabbitMQ returned the message: no queue ${queue} (mandatory publish). The event was not queued.`,
        nacked: `RabbitMQ refused the message for ${queue} (basic.nack). The event was not queued.`,
        unconfirmed: `RabbitMQ did not confirm the message for ${queue} within ${timeoutMs} ms. The event may not be queued.`,
        closed: `The RabbitMQ channel closed before the message for ${queue} was confirmed. The event may not be queued.`,
      }[code],
      cause === undefined ? undefined : { cause },
    );
    this.code = code;
    this.queue = queue;
  }
}
