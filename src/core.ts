/**
 * service-webhooks/core: everything of `service-webhooks` except the in-process `MemoryStore`, for
 * receivers that bring their own store (DynamoDB, Redis, PostgreSQL, yours). Its `createWebhooks` needs
 * `store`; in exchange a bundle built from this subpath and the adapters carries neither `MemoryStore`
 * nor lru-cache (about 7 KiB gzipped), and an unbundled deployment never loads them. The root,
 * `service-webhooks`, is this subpath plus `MemoryStore` and a `createWebhooks` that defaults to it:
 * both load this one file, so error classes, `instanceof` and the event types are the same objects
 * whichever of the two an application or an adapter imports.
 *
 * @example
 * ```ts
 * import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
 * import { createWebhooks } from 'service-webhooks/core';
 * import { DynamoDBStore } from 'service-webhooks/dynamodb';
 * import { lambdaHandler } from 'service-webhooks/lambda';
 *
 * const webhooks = createWebhooks({
 *   secret: process.env.WEBHOOK_SECRET!,
 *   store: new DynamoDBStore({ client: new DynamoDBClient({}), tableName: 'webhook-events' }),
 * });
 * webhooks.on('user.created', async (event) => console.log(event.data.email));
 * export const handler = lambdaHandler(webhooks);
 * ```
 * @packageDocumentation
 */

import { createWebhooks as createReceiver } from './create-webhooks.js';
import type {
  EventSchemas,
  IdempotencyStore,
  NoSchemas,
  TenantWebhooksOptions,
  Webhooks,
  WebhooksOptions,
} from './types.js';

export { answerNow } from './answer-now.js';
export type { BodyBudget } from './body-budget.js';
/**
 * @internal The core's one bound on a promise in time (store calls, schemas), for the plug-ins that
 * need one too (`openTelemetry()`'s read of an inbox engine's gauges). Not part of the public API; it
 * may change in any release.
 */
export { DeadlineExceeded, withDeadline } from './deadline.js';
export {
  ConfigurationError,
  EventDeadLetteredError,
  EventInProgressError,
  EventSchemaError,
  type EventSchemaIssue,
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
  ResourceBusyError,
  SchemaTimeoutError,
  SecretUnavailableError,
  STATUS_TABLE,
  StoreUnavailableError,
  UnauthenticatedInboxEntryError,
  UnknownTenantError,
  WebhookError,
  type WebhookErrorCode,
} from './errors.js';
export { EVENT_TYPES, isKnownEventType } from './event-types.js';
/**
 * @internal The shape of the synchronous calls the root's `MemoryStore` offers the core (see
 * `SYNCHRONOUS_CALLS` in synchronous-calls-key.ts). Not part of the public API; it may change in any
 * release.
 */
export type { Eventual } from './eventual.js';
export type {
  FlowControl,
  FlowControlSource,
  FlowGrant,
  InboxConcurrencyPerKey,
  InboxFlowOptions,
  InboxRate,
  ThrottleReason,
} from './flow-control.js';
export { formatDuration } from './format-duration.js';
export { type HandlerStep, WANTS_HANDLER_STEPS } from './handler-step.js';
export type { DeadLetter, DeadLetterPage, InboxAdmin, InboxStats, Replay } from './inbox-admin.js';
export { DeadLetterError, InboxBacklogError } from './inbox-errors.js';
export {
  INBOX_DEFAULTS,
  type InboxBackoff,
  type InboxLogger,
  type InboxLogRecord,
  type InboxMonitorOptions,
} from './inbox-settings.js';
export { KEEPS_STDERR } from './keeps-stderr.js';
export { DEFAULTS } from './options.js';
export { DELETED_POSITION, ORDERING_STORE_OPERATIONS, orderingPosition } from './ordering.js';
export {
  RATE_LIMIT_DEFAULT_WAIT_MS,
  RATE_LIMIT_MAX_WAIT_MS,
  RATE_LIMIT_MIN_WAIT_MS,
  type RateLimitAnswer,
  RateLimitedError,
  rateLimitedError,
  /**
   * @internal The `RateLimitedError` a run's failure carries, for the inbox engines' verdict on a
   * failed run (one walk of the causes for the core's answer and every engine). Not part of the public
   * API; it may change in any release.
   */
  rateLimitedIn,
} from './rate-limited.js';
export { DUPLICATE_HEADER, STALE_HEADER } from './responses.js';
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
  InferSchemaOutput,
  StandardSchemaIssue,
  StandardSchemaProps,
  StandardSchemaResult,
  StandardSchemaV1,
} from './standard-schema.js';
export type { SynchronousCalls } from './synchronous-store.js';
export type {
  DeliveryAnswer,
  DeliveryTelemetry,
  InboxGauges,
  InboxRunStart,
  TelemetryStep,
  WebhookTelemetry,
} from './telemetry.js';
export { readsTenant } from './tenant-input.js';
/** @internal The timer `withDeadline` arms; see above. */
export { TimeoutQueue } from './timeout-queue.js';
export type {
  AnyWebhookEvent,
  AnyWebhooks,
  BackgroundErrorListener,
  ClaimResult,
  CompleteResult,
  ContextFor,
  DeliveryOutcome,
  DeliveryRecord,
  ErrorListener,
  EventData,
  EventFor,
  EventForArgument,
  EventNameArgument,
  EventNameOrWildcard,
  EventSchemas,
  HandleInput,
  HandlerContext,
  HeadersInput,
  IdempotencyStore,
  InboxEntry,
  InboxQueue,
  NoSchemas,
  OrderingMode,
  OrderingRules,
  PaymentData,
  ProcessOptions,
  ProcessResult,
  ProjectData,
  RawBody,
  RenewResult,
  ResourceClaimResult,
  SchemaEventMap,
  SecretOption,
  StaleEvent,
  StaleListener,
  TenantHandlerContext,
  TenantOptions,
  TenantRequest,
  TenantSource,
  TenantWebhooksOptions,
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

/**
 * Create a webhook receiver on the store you bring: `store` is required here (the root's
 * `createWebhooks` defaults it to a `MemoryStore`). Options are checked as the root's are, and a
 * mistake throws a `ConfigurationError` that says what to change.
 *
 * @example
 * ```ts
 * import Redis from 'ioredis';
 * import { createWebhooks } from 'service-webhooks/core';
 * import { RedisStore } from 'service-webhooks/redis';
 *
 * const webhooks = createWebhooks({
 *   secret: process.env.WEBHOOK_SECRET!,
 *   store: new RedisStore({ client: new Redis(process.env.REDIS_URL!) }),
 * });
 * webhooks.on('payment.*', async (event) => console.log(event.type, event.data));
 * ```
 */
export function createWebhooks<Schemas extends EventSchemas = NoSchemas, Tenant extends string = string>(
  options: TenantWebhooksOptions<Schemas, Tenant> & { store: IdempotencyStore },
): Webhooks<Schemas, Tenant>;
export function createWebhooks<Schemas extends EventSchemas = NoSchemas>(
  options: WebhooksOptions<Schemas> & { store: IdempotencyStore },
): Webhooks<Schemas>;
export function createWebhooks(
  options: (WebhooksOptions | TenantWebhooksOptions<EventSchemas, string>) & { store: IdempotencyStore },
): Webhooks<EventSchemas, string> | Webhooks<EventSchemas> {
  return createReceiver(options) as Webhooks<EventSchemas, string>;
}
