/**
 * service-webhooks: receive the service's webhooks safely. Verify the signature over the raw bytes,
 * deduplicate retries and races by event id, route to typed handlers.
 *
 * @example
 * ```ts
 * import { createWebhooks } from 'service-webhooks';
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! });
 * webhooks.on('user.created', (event) => console.log(event.data.email));
 * ```
 * @packageDocumentation
 */

export type { BodyBudget } from './body-budget.js';
export { createWebhooks } from './create-webhooks.js';
export {
  ConfigurationError,
  EventDeadLetteredError,
  EventInProgressError,
  EventTooOldError,
  HandlerFailedError,
  HandlerTimeoutError,
  InboxUnavailableError,
  InvalidInboxEntryError,
  InvalidRequestError,
  InvalidSignatureError,
  LeaseLostError,
  MethodNotAllowedError,
  MissingSignatureError,
  PayloadTooLargeError,
  RawBodyUnavailableError,
  ReceiverBusyError,
  SecretUnavailableError,
  STATUS_TABLE,
  StoreUnavailableError,
  WebhookError,
  type WebhookErrorCode,
} from './errors.js';
export { EVENT_TYPES, isKnownEventType } from './event-types.js';
export { MemoryStore, type MemoryStoreOptions } from './memory-store.js';
export { DEFAULTS } from './options.js';
export { DUPLICATE_HEADER } from './responses.js';
export { SENDER_MAX_ATTEMPTS, SENDER_RETRY_SPAN_MS, SENDER_SCHEDULE } from './sender-schedule.js';
export {
  SIGNATURE_HEADER,
  type SignatureCheck,
  signPayload,
  signPayloadWeb,
  verifySignature,
  verifySignatureWeb,
} from './signature.js';
export type {
  AnyWebhookEvent,
  BackgroundErrorListener,
  ClaimResult,
  CompleteResult,
  DeliveryOutcome,
  DeliveryRecord,
  ErrorListener,
  EventData,
  EventFor,
  HandleInput,
  HandlerContext,
  HeadersInput,
  IdempotencyStore,
  InboxEntry,
  InboxQueue,
  PaymentData,
  ProcessOptions,
  ProcessResult,
  ProjectData,
  RawBody,
  RenewResult,
  SecretOption,
  UserData,
  WebhookEvent,
  WebhookEventMap,
  WebhookEventName,
  WebhookHandler,
  WebhookLogger,
  WebhookResponse,
  Webhooks,
  WebhooksOptions,
  WildcardEventName,
} from './types.js';
