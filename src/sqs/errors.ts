/** What the SQS inbox refuses, as typed errors with a stable `code`. */
/**
 * An event whose entry (its JSON, the inbox's attributes and the room a worker needs for a dead
 * letter's cause) is larger than the queue's `MaximumMessageSize`. SQS would refuse the write, and
 * the inbox never truncates an event: `enqueue` rejects with this error, so the door answers 503
 * `inbox_unavailable` and reports `InboxUnavailableError` to `onError` with this error as its `cause`.
 * The sender's retries meet the same limit: raise the queue's `MaximumMessageSize` (up to 1 MiB) or
 * lower the receiver's `maxBodyBytes` below it, so that a too-large body is refused with 413 instead.
 *
 * @example
 * ```ts
 * webhooks.onError((error) => {
 *   if (error.cause instanceof SqsMessageTooLargeError) alert(`event ${error.cause.eventId}: ${error.cause.bytes} bytes`);
 * });
 * ```
 */
export class SqsMessageTooLargeError extends Error {
  override name = 'SqsMessageTooLargeError';
  readonly code = 'sqs_message_too_large' as const;
  /** The event's id. */
  readonly eventId: string;
  /** The bytes the message would have, the worker's headroom included. */
  readonly bytes: number;
  /** The queue's `MaximumMessageSize`. */
  readonly maxBytes: number;

  constructor(eventId: string, bytes: number, maxBytes: number) {
    super(
      `Event ${eventId} needs ${bytes} bytes in SQS (entry, attributes and the room a dead letter's cause takes) and the queue takes at most ${maxBytes} (MaximumMessageSize): raise MaximumMessageSize (up to 1,048,576) or lower the receiver's maxBodyBytes. The event was not queued.`,
    );
    this.eventId = eventId;
    this.bytes = bytes;
    this.maxBytes = maxBytes;
  }
}
