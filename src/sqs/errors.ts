/** What the SQS inbox refuses, as typed errors with a stable `code`. */
import { PayloadTooLargeError } from 'service-webhooks/core';

/**
 * An event whose entry (its JSON, the inbox's attributes and the room a worker needs for a dead
 * letter's cause) is larger than the queue's `MaximumMessageSize`. SQS would refuse the write, and
 * the inbox never truncates an event: `enqueue` rejects with this error, a `PayloadTooLargeError`, so
 * the door answers 413 `payload_too_large` (as for a body over `maxBodyBytes`) and reports this error,
 * with the sizes, to `onError`. The sender's retries meet the same limit: raise the queue's
 * `MaximumMessageSize` (up to 1 MiB) or lower the receiver's `maxBodyBytes` below it.
 *
 * @example
 * ```ts
 * webhooks.onError((error) => {
 *   if (error instanceof SqsMessageTooLargeError) alert(`event ${error.eventId}: ${error.bytes} of ${error.maxBytes} bytes`);
 * });
 * ```
 */
export class SqsMessageTooLargeError extends PayloadTooLargeError {
  override name = 'SqsMessageTooLargeError';
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
