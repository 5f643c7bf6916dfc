/**
 * The public types of service-webhooks, kept together so that the contract users program against
 * reads in one place. Runtime code lives in the files named after each concept.
 */

/**
 * `data` of every user event, as the service documents it.
 *
 * @example
 * ```ts
 * webhooks.on('user.created', (event) => sendWelcomeMail(event.data.email));
 * ```
 */
export interface UserData {
  object: 'user';
  id: string;
  name: string;
  email: string;
  created_at?: string;
}

/**
 * `data` of project events. The service documents only `object` and `id`; declare the fields your
 * account sends by declaration merging and they are typed everywhere.
 *
 * @example
 * ```ts
 * declare module 'service-webhooks' {
 *   interface ProjectData { name: string }
 * }
 * webhooks.on('project.created', (event) => event.data.name);
 * ```
 */
export interface ProjectData {
  object: 'project';
  id: string;
}

/**
 * `data` of payment events. The service documents only `object` and `id`; declare the fields your
 * account sends by declaration merging.
 *
 * @example
 * ```ts
 * declare module 'service-webhooks' {
 *   interface PaymentData { amount: number; currency: string }
 * }
 * webhooks.on('payment.succeeded', (event) => event.data.amount);
 * ```
 */
export interface PaymentData {
  object: 'payment';
  id: string;
}

/**
 * The envelope every delivery carries. `id` is the idempotency key; `created` is signed, so its age
 * can be trusted once the signature has been verified.
 *
 * @example
 * ```ts
 * const event: WebhookEvent<'user.created', UserData> = await webhooks.verifyAndParse(body, signature);
 * ```
 */
export interface WebhookEvent<TType extends string = string, TData = EventData> {
  /** Event id, unique per event: the key deduplication uses. */
  id: string;
  type: TType;
  /** Creation time in Unix seconds. */
  created: number;
  data: TData;
  /** `false` for sandbox events. */
  livemode: boolean;
  /** Deliveries still pending for this event, as the sender counted at sending time. */
  pending_webhooks?: number;
  /** The API request that caused the event. */
  request?: { id: string | null };
}

/**
 * The `data` of an event whose type this version of the library does not know.
 *
 * @example
 * ```ts
 * const event = await webhooks.verifyAndParse(body, signature);
 * console.log(event.data.object, event.data.id);
 * ```
 */
export interface EventData {
  object?: string;
  id?: string;
  [field: string]: unknown;
}

/**
 * Every event type the service sends, mapped to its event. Handlers registered with `on()` are typed
 * from this map, so a misspelled name does not compile.
 *
 * @example
 * ```ts
 * type Deleted = WebhookEventMap['user.deleted'];
 * ```
 */
export interface WebhookEventMap {
  'user.created': WebhookEvent<'user.created', UserData>;
  'user.updated': WebhookEvent<'user.updated', UserData>;
  'user.deleted': WebhookEvent<'user.deleted', UserData>;
  'project.created': WebhookEvent<'project.created', ProjectData>;
  'project.updated': WebhookEvent<'project.updated', ProjectData>;
  'project.deleted': WebhookEvent<'project.deleted', ProjectData>;
  'payment.succeeded': WebhookEvent<'payment.succeeded', PaymentData>;
  'payment.failed': WebhookEvent<'payment.failed', PaymentData>;
  'payment.refunded': WebhookEvent<'payment.refunded', PaymentData>;
}

/**
 * The name of an event type the service sends, such as `'user.created'`.
 *
 * @example
 * ```ts
 * const name: WebhookEventName = 'payment.refunded';
 * ```
 */
export type WebhookEventName = keyof WebhookEventMap;

/**
 * A wildcard that matches every event of one resource, such as `'payment.*'`.
 *
 * @example
 * ```ts
 * webhooks.on('payment.*', (event) => event.type); // 'payment.succeeded' | 'payment.failed' | 'payment.refunded'
 * ```
 */
export type WildcardEventName =
  `${WebhookEventName extends `${infer Resource}.${string}` ? Resource : never}.*`;

/**
 * Any event the service documents: a union narrowed by `type`.
 *
 * @example
 * ```ts
 * webhooks.onAny((event) => { if (event.type === 'user.created') event.data.email; });
 * ```
 */
export type AnyWebhookEvent = WebhookEventMap[WebhookEventName];

/**
 * The event a handler registered for `Name` receives: one event type, or the union a wildcard covers.
 *
 * @example
 * ```ts
 * type Payments = EventFor<'payment.*'>;
 * ```
 */
export type EventFor<Name extends WebhookEventName | WildcardEventName> = Name extends `${infer Resource}.*`
  ? Extract<AnyWebhookEvent, { type: `${Resource}.${string}` }>
  : Name extends WebhookEventName
    ? WebhookEventMap[Name]
    : never;

/**
 * What a handler receives besides the event.
 *
 * @example
 * ```ts
 * webhooks.on('user.created', async (event, ctx) => {
 *   await fetch('https://crm.example/users', { method: 'POST', signal: ctx.signal });
 * });
 * ```
 */
export interface HandlerContext {
  /** Aborted when the handler runs past `handlerTimeoutMs`; pass it to every I/O call you make. */
  readonly signal: AbortSignal;
  /** Index, in the configured `secret` list, of the secret that signed this delivery. */
  readonly secretIndex: number;
}

/**
 * A function that handles one kind of event. Throwing (or rejecting) makes the receiver answer 500 so
 * that the service retries the delivery.
 *
 * @example
 * ```ts
 * const onPayment: WebhookHandler<EventFor<'payment.*'>> = async (event) => { await ledger.record(event); };
 * ```
 */
// The result is awaited and otherwise ignored: `unknown` lets one-line handlers return what they compute.
export type WebhookHandler<TEvent> = (event: TEvent, context: HandlerContext) => unknown;

/**
 * Told about failures on the receiving side: handler errors and timeouts, store outages, lost leases,
 * misconfigured adapters. The event is there when the failure happened after it was verified.
 *
 * @example
 * ```ts
 * webhooks.onError((error, event) => Sentry.captureException(error, { extra: { eventId: event?.id } }));
 * ```
 */
export type ErrorListener = (
  error: import('./errors.js').WebhookError,
  event: WebhookEvent | undefined,
) => void;

/** What a claim found. */
export type ClaimResult = 'claimed' | 'in_progress' | 'completed';

/** What a completion found. */
export type CompleteResult = 'completed' | 'lost';

/**
 * Remembers which events were handled, so that retries and concurrent copies of one event run its
 * handlers once. The rules every implementation must follow are executable: run
 * `storeConformanceSuite` from `service-webhooks/testing` against yours.
 *
 * @example
 * ```ts
 * const store: IdempotencyStore = new MemoryStore({ maxEvents: 50_000 });
 * const webhooks = createWebhooks({ secret, store });
 * ```
 */
export interface IdempotencyStore {
  /**
   * Atomically take the event for this delivery attempt. Of concurrent claims of one id exactly one
   * answers `'claimed'`; the claim expires after `leaseMs` unless completed or released first.
   */
  claim(eventId: string, token: string, leaseMs: number): Promise<ClaimResult>;
  /**
   * Mark the event handled for `ttlMs`, only while `token` still owns the claim; otherwise answer
   * `'lost'` and change nothing.
   */
  complete(eventId: string, token: string, ttlMs: number): Promise<CompleteResult>;
  /** Give the claim up so that the next delivery may run the handlers, only while `token` owns it. */
  release(eventId: string, token: string): Promise<void>;
}

/**
 * Receives one structured record per delivery. `console` and pino loggers fit as they are.
 *
 * @example
 * ```ts
 * createWebhooks({ secret, logger: console });
 * createWebhooks({ secret, logger: pino() });
 * ```
 */
export interface WebhookLogger {
  info(record: DeliveryRecord, message?: string): void;
  warn(record: DeliveryRecord, message?: string): void;
  error(record: DeliveryRecord, message?: string): void;
}

/**
 * What happened to one delivery: handled (2xx after running handlers or finding none), duplicate
 * (already handled), rejected (4xx, the sender's fault) or failed (5xx, ours; the sender retries).
 */
export type DeliveryOutcome = 'handled' | 'duplicate' | 'rejected' | 'failed';

/**
 * The record the logger receives. It never holds a secret or a body.
 *
 * @example
 * ```ts
 * const logger = { info: (r: DeliveryRecord) => metrics.timing(`webhook.${r.outcome}`, r.durationMs), warn() {}, error() {} };
 * ```
 */
export interface DeliveryRecord {
  readonly eventId: string | undefined;
  readonly eventType: string | undefined;
  readonly outcome: DeliveryOutcome;
  readonly status: number;
  /** The error code of the status table, when the answer was not a plain 200. */
  readonly code: string | undefined;
  readonly durationMs: number;
  /** Index of the secret that verified the delivery, when one did. */
  readonly secretIndex: number | undefined;
  /** The failure, on `failed` outcomes (its `cause` holds what a handler or store threw). */
  readonly error?: import('./errors.js').WebhookError;
}

/**
 * How `createWebhooks` behaves. Every limit has a default derived from the sender's schedule (retries
 * after 1, 5 and 15 minutes; 30 seconds per attempt).
 *
 * @example
 * ```ts
 * createWebhooks({ secret: [process.env.WEBHOOK_SECRET!, process.env.WEBHOOK_SECRET_OLD!], handlerTimeoutMs: 10_000 });
 * ```
 */
export interface WebhooksOptions {
  /** The webhook secret, or several while rotating: a delivery signed with any one of them is accepted. */
  secret: string | readonly string[];
  /**
   * Where handled event ids are remembered. Use a shared store (`RedisStore`) when more than one
   * process receives deliveries.
   * @default new MemoryStore()
   */
  store?: IdempotencyStore;
  /**
   * Largest body accepted; a larger one is answered 413 and never fully read by the adapters.
   * @default 1_048_576 (1 MiB)
   */
  maxBodyBytes?: number;
  /**
   * Oldest signed `created` accepted, so a captured delivery cannot be replayed after its id was
   * forgotten. Never above `dedupTtlSeconds`.
   * @default 86_400 (or `dedupTtlSeconds` when that is lower)
   */
  maxEventAgeSeconds?: number;
  /**
   * How long a claim protects an event being handled. Longer than `handlerTimeoutMs`, shorter than the
   * sender's first retry (60 s), so a crashed worker never blocks an event.
   * @default 45
   */
  leaseSeconds?: number;
  /**
   * How long a handled event id is remembered.
   * @default 86_400
   */
  dedupTtlSeconds?: number;
  /**
   * Budget of the handlers of one delivery; `ctx.signal` aborts then and the sender is answered 503 so
   * it retries. Below the sender's 30 s timeout.
   * @default 25_000
   */
  handlerTimeoutMs?: number;
  /**
   * Deadline of every store call: a store that hangs is treated as down.
   * @default 2_000
   */
  storeTimeoutMs?: number;
  /**
   * What to do when the store is unreachable: `'reject'` answers 503 so the sender retries later;
   * `'process'` runs the handlers without deduplication.
   * @default 'reject'
   */
  onStoreError?: 'reject' | 'process';
  /** Receives one record per delivery. */
  logger?: WebhookLogger;
}

/**
 * A header collection as frameworks hand it over: a Fetch `Headers` or a plain object whose names may
 * be in any case.
 */
export type HeadersInput =
  | { get(name: string): string | null }
  | Readonly<Record<string, string | readonly string[] | undefined>>;

/** The raw body: the exact bytes received, or the exact string when a platform gives only that. */
export type RawBody = Uint8Array | ArrayBuffer | string;

/**
 * One delivery as an adapter hands it to the core.
 *
 * @example
 * ```ts
 * const response = await webhooks.handle({ body: rawBytes, headers: request.headers, method: 'POST' });
 * ```
 */
export interface HandleInput {
  body: RawBody;
  headers: HeadersInput;
  /** The HTTP method, when the adapter owns the route: anything but POST is answered 405. */
  method?: string;
  /** A shorter handler budget for this delivery, such as a Lambda's remaining time. */
  handlerTimeoutMs?: number;
}

/**
 * What to answer the sender. Adapters write it out as it is.
 *
 * @example
 * ```ts
 * const { status, headers, body } = await webhooks.handle({ body, headers });
 * return new Response(body, { status, headers });
 * ```
 */
export interface WebhookResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}
