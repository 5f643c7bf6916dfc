/**
 * Every way a delivery can go wrong, as typed errors with a stable `code`, and the one table that maps
 * each code to what the sender is told. Nothing else in the library picks a status.
 */

/** The status table of the public contract: every error code, its HTTP status, its public message. */
export const STATUS_TABLE = {
  missing_signature: { status: 401, message: 'The x-service-signature header is missing.' },
  invalid_signature: {
    status: 401,
    message: 'The x-service-signature header is malformed or does not match the body.',
  },
  invalid_request: { status: 400, message: 'The body is not a valid event.' },
  event_too_old: { status: 400, message: 'The event is outside the accepted time window.' },
  payload_too_large: { status: 413, message: 'The body is larger than this receiver accepts.' },
  method_not_allowed: { status: 405, message: 'Deliveries must use POST.' },
  event_in_progress: {
    status: 409,
    message: 'This event is being handled by another delivery; retry later.',
  },
  resource_busy: {
    status: 409,
    message: 'Another event of the same resource is being handled; retry later.',
  },
  handler_failed: { status: 500, message: 'The receiver failed to handle the event; retry later.' },
  event_schema_mismatch: {
    status: 500,
    message: "The event does not match the receiver's schema for its type; retry later.",
  },
  raw_body_unavailable: {
    status: 500,
    message: 'The receiver is misconfigured and cannot read the raw body; retry later.',
  },
  handler_timeout: {
    status: 503,
    message: 'The receiver did not finish handling the event in time; retry later.',
  },
  rate_limited: {
    status: 503,
    message: 'A service the receiver calls is rate limiting it, so the event was not handled; retry later.',
  },
  schema_timeout: {
    status: 503,
    message: 'The receiver did not finish checking the event in time; retry later.',
  },
  store_unavailable: { status: 503, message: 'The receiver cannot record events right now; retry later.' },
  internal_error: {
    status: 500,
    message: 'The receiver failed unexpectedly; retry later.',
  },
  secret_unavailable: {
    status: 503,
    message: 'The receiver cannot load its webhook secret right now; retry later.',
  },
  receiver_busy: {
    status: 503,
    message: 'The receiver is reading too many request bodies at once; retry later.',
  },
  inbox_unavailable: {
    status: 503,
    message: 'The receiver cannot queue events right now; retry later.',
  },
  unknown_tenant: {
    status: 404,
    message: 'This receiver serves no webhook registration at this address.',
  },
} as const satisfies Record<string, { status: number; message: string }>;

/**
 * A stable, machine-readable error code: one of the status table, or one reported but never answered
 * (`invalid_configuration`, `lease_lost`, `invalid_inbox_entry`, `unauthenticated_inbox_entry`, and from inbox engines
 * `event_dead_lettered` and `inbox_backlog`).
 */
export type WebhookErrorCode =
  | keyof typeof STATUS_TABLE
  | 'invalid_configuration'
  | 'lease_lost'
  | 'event_dead_lettered'
  | 'inbox_backlog'
  | 'invalid_inbox_entry'
  | 'unauthenticated_inbox_entry';

/**
 * Base class of every error service-webhooks raises or reports. Match on `code`, which never changes
 * between versions, rather than on the message.
 *
 * @example
 * ```ts
 * webhooks.onError((error) => {
 *   if (error.code === 'store_unavailable') pageOnCall(error.cause);
 * });
 * ```
 */
export class WebhookError extends Error {
  override name = 'WebhookError';
  readonly code: WebhookErrorCode;
  /** The HTTP status the sender is answered with for this error (500 for errors never sent). */
  readonly status: number;

  constructor(code: WebhookErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.status = code in STATUS_TABLE ? STATUS_TABLE[code as keyof typeof STATUS_TABLE].status : 500;
  }
}

/**
 * The delivery carried no `x-service-signature` header (401).
 * @example
 * ```ts
 * try { await webhooks.verifyAndParse(body, undefined); } catch (e) { e instanceof MissingSignatureError; }
 * ```
 */
export class MissingSignatureError extends WebhookError {
  override name = 'MissingSignatureError';
  constructor() {
    super('missing_signature', STATUS_TABLE.missing_signature.message);
  }
}

/**
 * The signature is not `sha256=` and 64 lowercase hex digits, or no configured secret produced it (401).
 * @example
 * ```ts
 * try { await webhooks.verifyAndParse(body, 'sha256=00'); } catch (e) { e instanceof InvalidSignatureError; }
 * ```
 */
export class InvalidSignatureError extends WebhookError {
  override name = 'InvalidSignatureError';
  constructor() {
    super('invalid_signature', STATUS_TABLE.invalid_signature.message);
  }
}

/**
 * The body was signed but is not JSON or not a valid event envelope (400). The message names the field.
 * @example
 * ```ts
 * try { await webhooks.verifyAndParse(signedGarbage, signature); } catch (e) { e instanceof InvalidRequestError; }
 * ```
 */
export class InvalidRequestError extends WebhookError {
  override name = 'InvalidRequestError';
  constructor(message: string = STATUS_TABLE.invalid_request.message, options?: { cause?: unknown }) {
    super('invalid_request', message, options);
  }
}

/**
 * The signed `created` is older than `maxEventAgeSeconds` or too far in the future: a replay (400).
 * @example
 * ```ts
 * try { await webhooks.verifyAndParse(oldBody, signature); } catch (e) { e instanceof EventTooOldError; }
 * ```
 */
export class EventTooOldError extends WebhookError {
  override name = 'EventTooOldError';
  constructor() {
    super('event_too_old', STATUS_TABLE.event_too_old.message);
  }
}

/**
 * The body is larger than `maxBodyBytes` (413).
 * @example
 * ```ts
 * return webhooks.reject(new PayloadTooLargeError());
 * ```
 */
export class PayloadTooLargeError extends WebhookError {
  override name = 'PayloadTooLargeError';
  /** `message`: what was too large for what, where more than the table's words help (an inbox's limit). */
  constructor(message: string = STATUS_TABLE.payload_too_large.message) {
    super('payload_too_large', message);
  }
}

/**
 * A route owned by an adapter was called with another method than POST (405).
 * @example
 * ```ts
 * return webhooks.reject(new MethodNotAllowedError());
 * ```
 */
export class MethodNotAllowedError extends WebhookError {
  override name = 'MethodNotAllowedError';
  constructor() {
    super('method_not_allowed', STATUS_TABLE.method_not_allowed.message);
  }
}

/**
 * Another delivery of the same event holds the claim right now (409, with `Retry-After`).
 * @example
 * ```ts
 * const { status } = await webhooks.handle(copyOfEventBeingHandled); // 409
 * ```
 */
export class EventInProgressError extends WebhookError {
  override name = 'EventInProgressError';
  /** The `Retry-After` of the answer: the lease, after which the claim has ended or been renewed. */
  readonly retryAfterSeconds: number | undefined;
  constructor(retryAfterSeconds?: number) {
    super('event_in_progress', STATUS_TABLE.event_in_progress.message);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * With the `ordering` option: another event of the same resource (`data.object` + `data.id`) is being
 * handled right now (409, with `Retry-After`: what is left of its lease). An inbox worker defers the
 * event without spending an attempt.
 * @example
 * ```ts
 * const { status } = await webhooks.handle(updateOfUserBeingHandled); // 409 resource_busy
 * ```
 */
export class ResourceBusyError extends WebhookError {
  override name = 'ResourceBusyError';
  /** The `Retry-After` of the answer: what was left of the holder's lease, in whole seconds (at least 1). */
  readonly retryAfterSeconds: number;
  constructor(retryAfterSeconds: number) {
    super('resource_busy', STATUS_TABLE.resource_busy.message);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * A handler threw or rejected; `cause` is what it threw (500, so the sender retries). The handler's
 * message is never sent to the sender.
 * @example
 * ```ts
 * webhooks.onError((error) => { if (error instanceof HandlerFailedError) console.error(error.cause); });
 * ```
 */
export class HandlerFailedError extends WebhookError {
  override name = 'HandlerFailedError';
  constructor(cause: unknown) {
    super('handler_failed', 'A handler threw while handling the event.', { cause });
  }
}

/**
 * One problem a schema found in an event: where (keys from the event's root) and what.
 *
 * @example
 * ```ts
 * webhooks.onError((error) => {
 *   if (error instanceof EventSchemaError) for (const { path, message } of error.issues) console.log(path.join('.'), message);
 * });
 * ```
 */
export interface EventSchemaIssue {
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

/**
 * A signed event failed the schema given for its type (`createWebhooks({ schemas })`): no handler ran.
 * Answered 500 `event_schema_mismatch`, so the sender retries and a schema fixed within its schedule
 * handles the event; an inbox worker dead-letters it at once (a replay after the fix handles it). The
 * issues say where and what, as the schema reported them; none of it is sent to the sender.
 * @example
 * ```ts
 * webhooks.onError((error) => {
 *   if (error instanceof EventSchemaError) console.error(error.eventType, error.eventId, error.issues);
 * });
 * ```
 */
export class EventSchemaError extends WebhookError {
  override name = 'EventSchemaError';
  readonly eventType: string;
  readonly eventId: string;
  readonly issues: readonly EventSchemaIssue[];
  constructor(
    eventType: string,
    eventId: string,
    issues: readonly EventSchemaIssue[],
    options?: { cause?: unknown },
  ) {
    const listed = issues
      .slice(0, 5)
      .map(({ path, message }) => (path.length > 0 ? `${path.map(String).join('.')}: ${message}` : message))
      .join('; ');
    const more = issues.length > 5 ? ` (and ${issues.length - 5} more)` : '';
    super(
      'event_schema_mismatch',
      `Event ${eventId} (${eventType}) does not match its schema: ${listed}${more}.`,
      options,
    );
    this.eventType = eventType;
    this.eventId = eventId;
    this.issues = issues;
  }
}

/**
 * The handlers ran past `handlerTimeoutMs`; `ctx.signal` was aborted with this error (503).
 * @example
 * ```ts
 * webhooks.on('user.created', async (event, ctx) => { await fetch(url, { signal: ctx.signal }); });
 * ```
 */
export class HandlerTimeoutError extends WebhookError {
  override name = 'HandlerTimeoutError';
  constructor(timeoutMs: number) {
    super('handler_timeout', `The handlers did not settle within ${timeoutMs} ms.`);
  }
}

/**
 * The schema of the event's type (`createWebhooks({ schemas })`) did not settle within `storeTimeoutMs`
 * (503 with `Retry-After`): no handler ran and nothing was claimed, so the sender's retry is checked
 * again. A hung check is not the event's fault, unlike a mismatch: an inbox worker's attempt fails
 * and is retried like any other, never dead-lettered at once. `cause` is the missed deadline.
 * @example
 * ```ts
 * webhooks.onError((error) => {
 *   if (error instanceof SchemaTimeoutError) console.warn(`the ${error.eventType} schema hung`, error.eventId);
 * });
 * ```
 */
export class SchemaTimeoutError extends WebhookError {
  override name = 'SchemaTimeoutError';
  readonly eventType: string;
  readonly eventId: string;
  constructor(eventType: string, eventId: string, timeoutMs: number, options?: { cause?: unknown }) {
    super(
      'schema_timeout',
      `The schema of event ${eventId} (${eventType}) did not settle within ${timeoutMs} ms.`,
      options,
    );
    this.eventType = eventType;
    this.eventId = eventId;
  }
}

/**
 * The idempotency store failed or missed its deadline; `cause` says how (503 when failing closed).
 * @example
 * ```ts
 * webhooks.onError((error) => { if (error.code === 'store_unavailable') alert(error.cause); });
 * ```
 */
export class StoreUnavailableError extends WebhookError {
  override name = 'StoreUnavailableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('store_unavailable', message, options);
  }
}

/**
 * The adapters are already reading `maxBodyBytesInFlight` bytes of request bodies; this delivery would
 * go beyond it (503 with `Retry-After`, so the sender retries). Guards memory against many slow uploads.
 * @example
 * ```ts
 * if (!webhooks.bodyBudget.take(chunk.byteLength)) return webhooks.reject(new ReceiverBusyError());
 * ```
 */
export class ReceiverBusyError extends WebhookError {
  override name = 'ReceiverBusyError';
  constructor() {
    super('receiver_busy', STATUS_TABLE.receiver_busy.message);
  }
}

/**
 * The `secret` function threw, rejected or returned an empty secret (503 with `Retry-After`, so the
 * sender retries once it works); `cause` says why. The function is called again by the next delivery.
 * @example
 * ```ts
 * webhooks.onError((error) => { if (error instanceof SecretUnavailableError) alert(error.cause); });
 * ```
 */
export class SecretUnavailableError extends WebhookError {
  override name = 'SecretUnavailableError';
  /** `what` names what failed when it is not the `secret` option (the `tenant` option's functions). */
  constructor(options?: { cause?: unknown }, what = 'The `secret` function') {
    super('secret_unavailable', `${what} did not give a usable secret${causeText(options?.cause)}.`, options);
  }
}

/**
 * A receiver with `tenant` could not name a known tenant for the delivery (404 `unknown_tenant`): the
 * request carried none where `tenant.from` looks, or the tenant's `secret` function answered that it
 * does not exist (`undefined`, `null`, or no secret). Nothing was verified, no store was touched and
 * no handler ran. Reported to `onError`; `tenant` is the id the request named (cut to 64 characters;
 * unverified: anyone may send anything to the address), `undefined` when it named none.
 * @example
 * ```ts
 * webhooks.onError((error) => {
 *   if (error instanceof UnknownTenantError) log.warn({ tenant: error.tenant }, error.message);
 * });
 * ```
 */
export class UnknownTenantError extends WebhookError {
  override name = 'UnknownTenantError';
  readonly tenant: string | undefined;
  constructor(tenant: string | undefined, reason: string) {
    super(
      'unknown_tenant',
      tenant === undefined
        ? `The delivery names no tenant: ${reason}`
        : `Unknown tenant ${JSON.stringify(tenant.slice(0, 64))}: ${reason}`,
    );
    this.tenant = tenant?.slice(0, 64);
  }
}

function causeText(cause: unknown): string {
  // The sentence ends with its own full stop: a cause's own (a deadline's message has one) is dropped.
  return cause instanceof Error ? `: ${cause.message.replace(/\.$/, '')}` : '';
}

/**
 * A delivery's claim expired and another delivery took the event over before this one completed: the
 * handlers may have run twice. Reported to `onError`; the sender still gets its 200.
 * @example
 * ```ts
 * webhooks.onError((error) => { if (error instanceof LeaseLostError) metrics.increment('webhook.lease_lost'); });
 * ```
 */
export class LeaseLostError extends WebhookError {
  override name = 'LeaseLostError';
  constructor(eventId: string) {
    super(
      'lease_lost',
      `The claim on event ${eventId} expired before it was completed; raise leaseSeconds or make the handlers faster.`,
    );
  }
}

/**
 * The inbox (`createWebhooks({ inbox })`) failed to take a verified event or missed its deadline; `cause`
 * says how (503 with `Retry-After`: nothing was acknowledged, so the sender retries).
 * @example
 * ```ts
 * webhooks.onError((error) => { if (error instanceof InboxUnavailableError) alert(error.cause); });
 * ```
 */
export class InboxUnavailableError extends WebhookError {
  override name = 'InboxUnavailableError';
  constructor(options?: { cause?: unknown }) {
    super('inbox_unavailable', `The inbox did not take the event${causeText(options?.cause)}.`, options);
  }
}

/**
 * An inbox worker gave up on an event after its last attempt: it is kept in the dead-letter list,
 * where it can be inspected and replayed. Reported to `onError`; `cause` is the last failure.
 * @example
 * ```ts
 * webhooks.onError((error, event) => { if (error instanceof EventDeadLetteredError) page(`event ${event?.id} needs a replay`); });
 * ```
 */
export class EventDeadLetteredError extends WebhookError {
  override name = 'EventDeadLetteredError';
  /** The attempts made before the event was dead-lettered. */
  readonly attempts: number;
  constructor(eventId: string, attempts: number, options?: { cause?: unknown }) {
    super(
      'event_dead_lettered',
      `Event ${eventId} failed ${attempts} attempts and was moved to the dead-letter list; replay it once the cause is fixed.`,
      options,
    );
    this.attempts = attempts;
  }
}

/**
 * An adapter found the body already parsed by another middleware, so the signed bytes are gone (500,
 * so the sender retries once the setup is fixed). The message names the fix for the framework.
 * @example
 * ```ts
 * return webhooks.reject(new RawBodyUnavailableError('Mount the webhook route before express.json().'));
 * ```
 */
export class RawBodyUnavailableError extends WebhookError {
  override name = 'RawBodyUnavailableError';
  constructor(fix: string) {
    super('raw_body_unavailable', `The raw request body is not available: ${fix}`);
  }
}

/**
 * `webhooks.process` was given an entry no door of this library wrote: no event, an event that fails
 * the envelope check the door applies (id, type, created, data, livemode), or a `receivedAt` or
 * `secretIndex` that is not one. Retrying cannot fix it, so an inbox engine dead-letters it at once
 * (a poison message) instead of spending every attempt on it; no handler ever sees it. Reported to
 * `onError` by `process`; `reason` says what is wrong.
 * @example
 * ```ts
 * try { await webhooks.process(job.data); } catch (error) { if (error instanceof InvalidInboxEntryError) deadLetter(job, error.reason); }
 * ```
 */
export class InvalidInboxEntryError extends WebhookError {
  override name = 'InvalidInboxEntryError';
  /** What is wrong with the entry, e.g. "`event.created` must be an integer (Unix seconds)." */
  readonly reason: string;
  constructor(reason: string) {
    super('invalid_inbox_entry', `The inbox entry cannot be processed, and never will be: ${reason}`);
    this.reason = reason;
  }
}

/**
 * An inbox entry the door did not write as it is: no seal, or a seal that does not hold (the event,
 * `receivedAt`, `secretIndex`, `traceparent` or the attempt changed since, or it was sealed with a
 * key no longer listed). Whoever can write to the queue can write anything, so a worker runs no
 * handler on it; as every `InvalidInboxEntryError`, engines dead-letter it at once, and `process`
 * reports it to `onError`. Its own code tells a forgery (or a key rotated out too early) apart from
 * a malformed entry.
 * @example
 * ```ts
 * webhooks.onError((error) => { if (error.code === 'unauthenticated_inbox_entry') alertSecurity(error.reason); });
 * ```
 */
export class UnauthenticatedInboxEntryError extends InvalidInboxEntryError {
  override name = 'UnauthenticatedInboxEntryError';
  override readonly code: WebhookErrorCode = 'unauthenticated_inbox_entry';
}

/**
 * `createWebhooks` or a store was given options it cannot work with. Thrown at construction; the
 * message says what to change.
 * @example
 * ```ts
 * createWebhooks({ secret: '' }); // throws ConfigurationError: `secret` is empty ...
 * ```
 */
export class ConfigurationError extends WebhookError {
  override name = 'ConfigurationError';
  constructor(message: string) {
    super('invalid_configuration', message);
  }
}
