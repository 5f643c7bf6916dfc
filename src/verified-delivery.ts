import type { WebhookError } from './errors.js';
import type { WebhookEvent } from './types.js';

// Its own module because the verifier produces it and the schema check (which the options hold)
// refines it: with the type in the verifier, verifier -> options -> schema check -> verifier.

/** What steps 1 to 4 found: an event to claim, or the refusal to answer. */
export type Verified =
  | {
      readonly ok: true;
      readonly event: WebhookEvent;
      readonly secretIndex: number;
      /** How long the id must be remembered once handled: until the event can no longer be accepted. */
      readonly rememberMs: number;
      /** The clock read for the age check (Unix ms): when the delivery was received, to the handlers. */
      readonly receivedAt: number;
      /** The id as verified, set when `event` is a schema's output (which may not carry it as it was). */
      readonly eventId?: string;
    }
  | { readonly ok: false; readonly error: WebhookError };

/** An event that passed steps 1 to 4, with what its run needs to know of the delivery. */
export type Accepted = Extract<Verified, { readonly ok: true }>;
