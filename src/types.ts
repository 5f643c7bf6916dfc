/**
 * The public types of service-webhooks, kept together so that the contract users program against
 * reads in one place. Runtime code lives in the files named after each concept.
 */
import type { BodyBudget } from './body-budget.js';
import type { DeliveryOutcome } from './delivery-outcome.js';
import type { WebhookError } from './errors.js';
import type { HandlerStep } from './handler-step.js';
import type { InferSchemaOutput, StandardSchemaV1 } from './standard-schema.js';
import type { WebhookTelemetry } from './telemetry.js';

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
 * Every name `on()` accepts: an event type or a resource's wildcard.
 *
 * @example
 * ```ts
 * const names: EventNameOrWildcard[] = ['user.created', 'payment.*'];
 * ```
 */
export type EventNameOrWildcard = WebhookEventName | WildcardEventName;

/**
 * What `on()` takes as its first argument: one name or wildcard, or an array of them. A name that is
 * neither turns the parameter into the union of every valid choice, so the compiler's one error lists
 * them; the union is rebuilt through a mapped type because `keyof WebhookEventMap` (or an alias) is
 * what tsc would print otherwise. Names come from the map, so declaration-merged ones are listed too.
 */
export type EventNameArgument<Arg> = Arg extends string
  ? Arg extends EventNameOrWildcard
    ? Arg
    : { [Choice in EventNameOrWildcard]: Choice }[EventNameOrWildcard]
  : Arg extends readonly (infer Name)[]
    ? [Name] extends [EventNameOrWildcard]
      ? Arg
      : readonly { [Choice in EventNameOrWildcard]: Choice }[EventNameOrWildcard][]
    : never;

/**
 * The event `on()` hands the handler registered for `Arg`. `any` when a name is wrong: that mistake is
 * already reported on the name, and a second error on every use of `event` would bury it.
 */
export type EventForArgument<Arg, Schemas extends EventSchemas> = [
  Arg extends readonly (infer Name)[] ? Name : Arg,
] extends [infer Name extends EventNameOrWildcard]
  ? EventFor<Name, Schemas>
  : // biome-ignore lint/suspicious/noExplicitAny: see above; `unknown` or `never` would each add an error
    any;

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
 * Name it to type a handler that lives in a module of its own (see {@link WebhookHandler}); with
 * `createWebhooks({ schemas })`, pass `typeof schemas` second to get the schema's output.
 *
 * @example
 * ```ts
 * type Payments = EventFor<'payment.*'>;
 *
 * // welcome.ts: a plain function, typed without the receiver in scope
 * import type { EventFor } from 'service-webhooks';
 * export function welcomeMail(event: EventFor<'user.created'>): string {
 *   return `Welcome, ${event.data.name} <${event.data.email}>`;
 * }
 * ```
 */
export type EventFor<
  Name extends WebhookEventName | WildcardEventName,
  Schemas extends EventSchemas = NoSchemas,
> = Name extends `${infer Resource}.*`
  ? {
      [Type in WebhookEventName]: Type extends `${Resource}.${string}`
        ? SchemaEventMap<Schemas>[Type]
        : never;
    }[WebhookEventName]
  : Name extends WebhookEventName
    ? SchemaEventMap<Schemas>[Name]
    : never;

/**
 * Standard Schemas by event type, as `createWebhooks({ schemas })` takes them: each checks the whole
 * event (envelope and `data`), and its output is what that type's handlers receive.
 *
 * @example
 * ```ts
 * import { z } from 'zod';
 * const schemas = {
 *   'payment.succeeded': z.object({ data: z.object({ object: z.literal('payment'), id: z.string(), amount: z.number() }) }).loose(),
 * } satisfies EventSchemas;
 * ```
 */
export type EventSchemas = { readonly [Type in WebhookEventName]?: StandardSchemaV1 };

/** No schemas: every event is typed as the service documents it. */
// biome-ignore lint/complexity/noBannedTypes: the empty map is the point
export type NoSchemas = {};

/**
 * Each event type's event under `Schemas`: a schema's output where one is given, else the event as
 * {@link WebhookEventMap} types it.
 *
 * @example
 * ```ts
 * type Succeeded = SchemaEventMap<typeof schemas>['payment.succeeded'];
 * ```
 */
export type SchemaEventMap<Schemas extends EventSchemas = NoSchemas> = {
  [Type in WebhookEventName]: Schemas[Type] extends StandardSchemaV1
    ? InferSchemaOutput<Schemas[Type]>
    : WebhookEventMap[Type];
};

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
  /**
   * The receiver's attempt at this event, from 1: in an inbox worker, the queue's count; in the
   * request always 1, since the sender does not say which of its attempts a delivery is.
   */
  readonly attempt: number;
  /** When the receiver got the delivery (Unix milliseconds); in an inbox worker, when the door did. */
  readonly receivedAt: number;
}

/**
 * A function that handles one kind of event. Throwing (or rejecting) makes the receiver answer 500 so
 * that the service retries the delivery. Annotate a handler defined away from its `on()` call with it:
 * `event` and `ctx` are then typed there, and `on()` refuses it for an event it does not handle.
 *
 * @example
 * ```ts
 * // handlers/user-created.ts
 * import type { EventFor, WebhookHandler } from 'service-webhooks';
 *
 * export const onUserCreated: WebhookHandler<EventFor<'user.created'>> = async (event, ctx) => {
 *   await fetch('https://crm.example/users', {
 *     method: 'POST',
 *     body: JSON.stringify({ id: event.data.id, email: event.data.email }),
 *     signal: ctx.signal,
 *   });
 * };
 *
 * // server.ts
 * import { createWebhooks } from 'service-webhooks';
 * import { onUserCreated } from './handlers/user-created.js';
 *
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! });
 * webhooks.on('user.created', onUserCreated);
 * // webhooks.on('user.deleted', onUserCreated); // does not compile: the handler is for 'user.created'
 * ```
 *
 * @example
 * ```ts
 * const onPayment: WebhookHandler<EventFor<'payment.*'>> = async (event) => { await ledger.record(event); };
 * ```
 */
// The result is awaited and otherwise ignored: `unknown` lets one-line handlers return what they compute.
export type WebhookHandler<TEvent, TContext = HandlerContext> = (event: TEvent, context: TContext) => unknown;

/**
 * What a handler of a receiver with `tenant` receives besides the event: {@link HandlerContext} and
 * the tenant the delivery came for, typed as `tenant.from` gives it. A receiver without `tenant` has
 * no `ctx.tenant` at all.
 *
 * @example
 * ```ts
 * type AccountId = `acct_${string}`;
 * const onUser: WebhookHandler<EventFor<'user.created'>, TenantHandlerContext<AccountId>> = async (event, ctx) => {
 *   await crm.forAccount(ctx.tenant).addUser(event.data.email);
 * };
 * ```
 */
export interface TenantHandlerContext<Tenant extends string = string> extends HandlerContext {
  /** The tenant whose secret verified this delivery: its store keys and dedup scope are its own. */
  readonly tenant: Tenant;
}

/**
 * The handler context of a receiver: {@link TenantHandlerContext} when it was created with `tenant`,
 * else {@link HandlerContext}.
 *
 * @example
 * ```ts
 * type Plain = ContextFor<never>; // HandlerContext
 * type PerAccount = ContextFor<`acct_${string}`>; // HandlerContext & { tenant: `acct_${string}` }
 * ```
 */
export type ContextFor<Tenant extends string> = [Tenant] extends [never]
  ? HandlerContext
  : TenantHandlerContext<Tenant>;

/**
 * What `tenant.from` reads a tenant from: the request as the adapter knows it. `params` are the
 * framework's route parameters (Express `req.params`, Fastify `request.params`, Next.js route params,
 * Lambda `pathParameters`), `undefined` where the adapter has none (node:http, Fetch); `url` is the
 * request's URL as the adapter got it (a path with its query, or an absolute URL).
 *
 * @example
 * ```ts
 * const from = (request: TenantRequest) => request.header('x-account-id') ?? request.params?.account;
 * ```
 */
export interface TenantRequest {
  readonly params: Readonly<Record<string, string | undefined>> | undefined;
  readonly url: string | undefined;
  /** A request header by name, in any case; several values joined with `,`. */
  header(name: string): string | undefined;
}

/**
 * Where a receiver with `tenant` finds the tenant a delivery came for, without code of yours:
 * - `{ param: 'account' }`: the framework's route parameter (`app.post('/webhooks/:account', ...)` in
 *   Express, the Fastify plugin's `path: '/webhooks/:account'`, `app/webhooks/[account]/route.ts`, a
 *   Lambda's `pathParameters`);
 * - `{ path: '/webhooks/:account' }`: the request's path matched against a pattern with one `:name`
 *   segment, for adapters without routing (node:http, Fetch runtimes, a Lambda Function URL);
 * - `{ header: 'x-account-id' }`, `{ query: 'account' }`: a header, a query parameter;
 * - `{ host: 'subdomain' }` (the first label of the Host header: `acme` of `acme.hooks.example.com`)
 *   or `{ host: 'hostname' }` (the whole host name, lower-cased, without the port).
 *
 * @example
 * ```ts
 * const from: TenantSource = { param: 'account' };
 * ```
 */
export type TenantSource =
  | { readonly param: string }
  | { readonly path: string }
  | { readonly header: string }
  | { readonly query: string }
  | { readonly host: 'subdomain' | 'hostname' };

/**
 * The `tenant` option: one receiver, one route, many webhook registrations (a platform acting for
 * many accounts, each with its own webhook and secret). Per delivery the receiver reads the tenant
 * (`from`), asks `secret` for that tenant's secrets (cached), verifies the signature with them, and
 * keeps every store key in the tenant's own scope: the same event id under two tenants is two events.
 *
 * @example
 * ```ts
 * const webhooks = createWebhooks({
 *   tenant: {
 *     from: { param: 'account' },
 *     secret: async (account) => (await db.webhookSecrets(account)) ?? undefined,
 *     cacheTtlSeconds: 300,
 *   },
 * });
 * webhooks.on('user.created', (event, ctx) => console.log(ctx.tenant, event.data.email));
 * ```
 */
export interface TenantOptions<Tenant extends string = string> {
  /**
   * Where the tenant is read: a {@link TenantSource}, or a function of the request that returns the
   * tenant (its return type is `ctx.tenant`'s type) or `undefined` for none. A function may be async;
   * it then answers within `storeTimeoutMs`, as `secret` does. Whatever it returns is unverified (the
   * signature is checked with the tenant's secret only afterwards): never trust it for more than
   * finding the secret.
   *
   * A declared source reads any string, so it is allowed only where `Tenant` is `string`: a `secret`
   * whose parameter is annotated with a narrower type (`(account: AccountId) => …`) then fails to
   * compile here, rather than give `ctx.tenant` a type the source does not check.
   */
  from:
    | (string extends Tenant ? TenantSource : never)
    | ((request: TenantRequest) => Tenant | undefined | PromiseLike<Tenant | undefined>);
  /**
   * The tenant's webhook secret, or several while it rotates (the new one first). `undefined`, `null`
   * or an empty list say the tenant does not exist: the delivery is answered 404 `unknown_tenant`
   * without touching the store. A throw, a rejection, a blank secret or no answer within
   * `storeTimeoutMs` answer 503 `secret_unavailable`, so the sender retries; none of those is cached.
   * Its parameter may be left to take `from`'s type, or annotated by hand with it.
   */
  secret: (tenant: Tenant) => SecretOption | null | undefined | PromiseLike<SecretOption | null | undefined>;
  /**
   * How long a tenant's secrets are kept before `secret` is asked again (a rotation or a revoked
   * registration takes effect within it).
   * @default 300
   */
  cacheTtlSeconds?: number;
  /**
   * How many tenants' secrets are kept at once; the least recently used goes first.
   * @default 1000
   */
  maxTenants?: number;
  /**
   * How long "this tenant does not exist" is kept, so that a prober cycling through made-up ids, or a
   * removed account's retries, do not ask `secret` for every delivery. Kept apart from the known
   * tenants (as many again at most), so unknown ids never push a known tenant out. `0` keeps none.
   * @default 60
   */
  unknownTtlSeconds?: number;
}

/**
 * The options of a receiver with `tenant`: every option of {@link WebhooksOptions} but `secret`
 * (each tenant's come from `tenant.secret`). With an `inbox`, each entry carries its tenant, sealed.
 *
 * @example
 * ```ts
 * const options: TenantWebhooksOptions<NoSchemas, string> = {
 *   tenant: { from: { param: 'account' }, secret: (account) => secrets.get(account) },
 * };
 * ```
 */
export type TenantWebhooksOptions<Schemas extends EventSchemas, Tenant extends string> = Omit<
  WebhooksOptions<Schemas>,
  'secret'
> & {
  /** Each tenant's secrets come from `tenant.secret`. */
  secret?: never;
  /** See {@link TenantOptions}. */
  tenant: TenantOptions<Tenant>;
};

/**
 * Told about failures on the receiving side: handler errors and timeouts, store outages, lost leases,
 * misconfigured adapters. The event is there when the failure happened after it was verified. A listener
 * may be async: a promise it returns is caught, so a failing observer never crashes the process nor
 * changes the answer to the sender.
 *
 * @example
 * ```ts
 * webhooks.onError(async (error, event) => {
 *   await alerts.send({ code: error.code, eventId: event?.id });
 * });
 * ```
 */
export type ErrorListener = (error: WebhookError, event: WebhookEvent | undefined) => unknown;

/** What a claim found. */
export type ClaimResult = 'claimed' | 'in_progress' | 'completed';

/** What a completion found. */
export type CompleteResult = 'completed' | 'lost';

/** What a lease renewal found. */
export type RenewResult = 'renewed' | 'lost';

/**
 * What {@link IdempotencyStore.claimResource} found: the resource is now held by the caller's token
 * (with the newest position completed so far for it, or `undefined` when none is remembered), or it is
 * held by another attempt whose lease has `retryAfterMs` left.
 *
 * @example
 * ```ts
 * const found: ResourceClaimResult = await store.claimResource!('orders:user:usr_1', token, 45_000);
 * if (found.outcome === 'busy') console.log(`retry in ${found.retryAfterMs} ms`);
 * ```
 */
export type ResourceClaimResult =
  | { readonly outcome: 'claimed'; readonly watermark: number | undefined }
  | { readonly outcome: 'busy'; readonly retryAfterMs: number };

/**
 * How the `ordering` option guards the events of one resource (`data.object` + `data.id`):
 * - `'serialize'`: at most one handler of the resource runs at a time, in every process sharing the
 *   store; a delivery of a busy resource is answered 409 `resource_busy` (with `Retry-After`) so the
 *   sender retries it, and an inbox worker defers it without spending an attempt.
 * - `'latest'`: `'serialize'`, and an event older than the newest one handled for its resource is
 *   stale: no handler runs, it is recorded as handled, and it is answered 200 with `x-webhook-stale: true`.
 *
 * @example
 * ```ts
 * const mode: OrderingMode = 'latest';
 * ```
 */
export type OrderingMode = 'serialize' | 'latest';

/**
 * The `ordering` option: a mode per event type or resource wildcard, named as `on()` names them. A
 * type matched by both its name and its wildcard takes its name's mode. Types left out are not guarded.
 *
 * @example
 * ```ts
 * const ordering: OrderingRules = { 'user.*': 'latest', 'payment.*': 'serialize' };
 * ```
 */
export type OrderingRules = { readonly [Name in EventNameOrWildcard]?: OrderingMode };

/**
 * What the receiver tells `onStale` listeners about a stale event (one whose handlers did not run
 * because a newer event of its resource was handled first).
 *
 * @example
 * ```ts
 * webhooks.onStale((event, stale) => metrics.increment('webhook.stale', { resource: stale.resource }));
 * ```
 */
export interface StaleEvent {
  /** `data.object` and `data.id`, as `object:id` (without the dedup scope). */
  readonly resource: string;
  /** The event's position (see the ordering guide: `created` and its lifecycle rank). */
  readonly position: number;
  /** The newest position already handled for the resource. */
  readonly watermark: number;
}

/**
 * Called once for each stale event (see {@link OrderingMode}), after it was recorded as handled. What
 * it returns or throws changes nothing.
 *
 * @example
 * ```ts
 * webhooks.onStale((event, stale) => console.info(`${event.id} is older than ${stale.resource}'s newest`));
 * ```
 */
export type StaleListener = (event: WebhookEvent, stale: StaleEvent) => unknown;

/**
 * Remembers which events were handled, so that retries and concurrent copies of one event run its
 * handlers once. The rules every implementation must follow are executable: run
 * `storeConformanceSuite` from `service-webhooks/testing` against yours.
 *
 * Every call takes a `key`: the receiver's dedup scope and the event id (see the `namespace` option),
 * at most 400 characters of any text (an inbox run's key marks a scope and a replay id on top of
 * the event's). Store it as an opaque string.
 *
 * A record is absent, in progress (held by one claim `token` until its lease ends) or completed (until
 * its TTL ends). A lease that ended leaves the record as good as absent for every other attempt, but
 * its owner may still complete or renew it as long as no other attempt has taken it meanwhile.
 *
 * @example
 * ```ts
 * const store: IdempotencyStore = new MemoryStore({ maxEvents: 50_000 });
 * const webhooks = createWebhooks({ secret, store });
 * ```
 */
export interface IdempotencyStore {
  /**
   * Atomically take the event for this delivery attempt. Of concurrent claims of one key exactly one
   * answers `'claimed'`; the claim expires after `leaseMs` unless completed, renewed or released first.
   * A key whose lease ended (or whose completion's TTL ended) is claimed afresh.
   */
  claim(key: string, token: string, leaseMs: number): Promise<ClaimResult>;
  /**
   * Mark the event handled for `ttlMs`. Answers `'completed'` when `token` holds the record (even if its
   * lease ended) or when no other attempt holds a live lease and no completion is recorded (the lease
   * ended and nobody took the event over); otherwise answers `'lost'` and changes nothing.
   */
  complete(key: string, token: string, ttlMs: number): Promise<CompleteResult>;
  /** Give the claim up so that the next delivery may run the handlers, only while `token` holds it. */
  release(key: string, token: string): Promise<void>;
  /**
   * Optional. Extend the claim to `leaseMs` from now while a handler is still running, on the same terms
   * as `complete`: `'renewed'` when `token` holds the record (even if its lease ended) or when nobody
   * else holds a live lease and no completion is recorded (the record is then held by `token` again);
   * `'lost'` otherwise, changing nothing. Without it, a handler that outlives `leaseSeconds` can run
   * twice: a retry after the lease ended takes the event over.
   */
  renew?(key: string, token: string, leaseMs: number): Promise<RenewResult>;
  /**
   * Optional, with the three operations below: all four or none (the `ordering` option needs them; a
   * receiver with `ordering` over a store without them fails at construction).
   *
   * Take a resource (an event's `data.object` and `data.id` in the receiver's dedup scope, an opaque
   * string of at most 200 characters) for the delivery attempt holding `token`, fenced like `claim`:
   * of concurrent claims of one resource exactly one answers `'claimed'`; the lease ends after
   * `leaseMs` unless renewed, released or ended by `completeOrdered`; a resource whose lease ended is
   * claimed afresh by anyone. `'claimed'` carries the resource's watermark (the highest `position`
   * completed for it, or `undefined`), which outlives leases; `'busy'` carries what is left of the
   * holder's lease (at least 1 ms). Resources are apart from event keys: one string may name both.
   *
   * The key of an event guarded by ordering is its resource, `"\u001f"` and the rest of the key (so
   * that a store may keep the two together: `RedisStore` puts them in one Cluster hash slot), at most
   * 600 characters in all.
   */
  claimResource?(resource: string, token: string, leaseMs: number): Promise<ResourceClaimResult>;
  /**
   * Extend the resource's lease to `leaseMs` from now, on the same terms as `renew`: `'renewed'` when
   * `token` holds it (even if its lease ended) or when nobody else holds a live lease (it is then held
   * by `token` again); `'lost'` otherwise, changing nothing.
   */
  renewResource?(resource: string, token: string, leaseMs: number): Promise<RenewResult>;
  /** Give the resource's lease up, only while `token` holds it. Its watermark stays. */
  releaseResource?(resource: string, token: string): Promise<void>;
  /**
   * In one atomic step: exactly `complete(key, token, ttlMs)`'s rules for the event's key; and when
   * they answer `'completed'`, the resource's watermark becomes `max(watermark, position)` and lives
   * `watermarkTtlMs` from now (never shortened below what it had: an advance only extends), and the
   * resource's lease held by `token` ends (a lease held by another token is left alone). When they
   * answer `'lost'`, nothing changes. `position` is a non-negative safe integer.
   */
  completeOrdered?(
    key: string,
    token: string,
    ttlMs: number,
    resource: string,
    position: number,
    watermarkTtlMs: number,
  ): Promise<CompleteResult>;
  /**
   * Optional. Every receiver that uses the store calls it once, at construction, with its own way to
   * report: the store hands it what goes wrong outside a call (a pooled connection dropped while idle,
   * an eviction policy that would lose records), so that it reaches that receiver's `onError` (or
   * stderr) rather than crashing the process or vanishing. A store shared by several receivers keeps
   * every listener it is given.
   */
  onBackgroundError?(listener: BackgroundErrorListener): void;
}

/**
 * How a store or an inbox engine reports a failure that happened outside any call of the receiver's
 * (see {@link IdempotencyStore.onBackgroundError}).
 *
 * @example
 * ```ts
 * class MyStore implements IdempotencyStore {
 *   readonly #listeners = new Set<BackgroundErrorListener>();
 *   onBackgroundError(listener: BackgroundErrorListener) { this.#listeners.add(listener); }
 *   // ... claim, complete, release
 * }
 * ```
 */
export type BackgroundErrorListener = (error: WebhookError) => void;

/**
 * Receives one structured record per delivery. `console` and pino loggers fit as they are. A method may
 * be async: a promise it returns is caught, and a logger that throws changes nothing. With a logger the
 * receiver leaves failures to it rather than print them on stderr, unless the logger carries
 * `KEEPS_STDERR` (one that only looks on, as `devReporter()` does).
 *
 * @example
 * ```ts
 * createWebhooks({ secret, logger: console });
 * createWebhooks({ secret, logger: pino() });
 * ```
 */
export interface WebhookLogger {
  info(record: DeliveryRecord, message?: string): unknown;
  warn(record: DeliveryRecord, message?: string): unknown;
  error(record: DeliveryRecord, message?: string): unknown;
}

export type { DeliveryOutcome } from './delivery-outcome.js';

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
  /**
   * The failure, on `failed` outcomes (its `cause` holds what a handler or store threw). Under `err`, the
   * key whose serializer pino and bunyan apply, so its message, code, stack and cause reach the log.
   */
  readonly err?: WebhookError;
  /** The same failure as `err`, not enumerable, so a logger prints it once. Prefer `err`. */
  readonly error?: WebhookError;
  /**
   * `true` on the record of handlers that settled after the delivery was answered (503
   * `handler_timeout`): `outcome` then says how they ended (`handled` or `failed`), and `status` and
   * `code` repeat what the sender was told.
   */
  readonly late?: true;
  /** On the record of an inbox worker's run: which attempt it was, and the replay's id for a replayed dead letter. */
  readonly inboxRun?: { readonly attempt: number; readonly replayId: string | undefined };
  /**
   * Which handlers ran, in order, and how each ended: only for a logger that asks for them
   * (`WANTS_HANDLER_STEPS`, as `devReporter()` does).
   */
  readonly handlers?: readonly HandlerStep[];
  /**
   * `true` when the event's type is guarded by the `ordering` option but the event names no resource
   * (no string `data.object` and `data.id`, or longer than 128 characters together): it ran unguarded.
   */
  readonly unordered?: true;
  /**
   * With the `telemetry` option, the delivery's trace and span ids (W3C hex), so a log line joins its
   * trace: the names pino's OpenTelemetry instrumentation uses.
   */
  readonly trace_id?: string;
  readonly span_id?: string;
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
export interface WebhooksOptions<Schemas extends EventSchemas = EventSchemas> {
  /**
   * The webhook secret, or several while rotating: a delivery signed with any one of them is accepted.
   * Or a function (sync or async) that returns them, called when the first delivery needs them rather
   * than when the receiver is created: Next.js builds without the secret, Workers read it from `env`,
   * a secrets manager is asked once. Its result is checked as a literal secret would be and kept for
   * the receiver's life; a call that throws, rejects or returns an empty secret is not kept, the
   * delivery is answered 503 `secret_unavailable` (the error, with the same clear message, goes to
   * `onError`), and the next delivery calls it again.
   */
  secret: SecretOption | (() => SecretOption | Promise<SecretOption>);
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
   * Deadline of every store call: a store that hangs is treated as down. It also bounds what must
   * answer as quickly before the claim: a `secret` function's call and an async schema's check
   * (`schemas`), answered 503 `secret_unavailable` and 503 `schema_timeout` past it.
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
  /**
   * Traces and metrics of every delivery: `openTelemetry()` from `service-webhooks/opentelemetry`, or a
   * plug-in of your own. Without it no telemetry code runs.
   */
  telemetry?: WebhookTelemetry;
  /**
   * Standard Schemas (zod, valibot, arktype, or `eventSchemas` from `service-webhooks/schemas`) by
   * event type, each checking the whole event once its signature held. A signed event that fails its
   * schema never reaches a handler: the sender is answered 500 `event_schema_mismatch` (it retries, so
   * a fixed schema deployed within its schedule handles the event) and `onError` gets an
   * `EventSchemaError` with the issues; with an inbox, the worker dead-letters it at once. An output
   * that changes the event's `id` or `type` is such a mismatch too. An async schema that does not
   * settle within `storeTimeoutMs` is answered 503 `schema_timeout` (`SchemaTimeoutError`): retried,
   * in a worker too.
   */
  schemas?: Schemas;
  /**
   * The dedup scope of this receiver: event ids are remembered per scope, so receivers of different
   * registrations that share a store each handle every event once. Give one name per webhook
   * registration (letters, digits, `_`, `-`, `.`, `/`; at most 64), the same in every process that
   * serves it. Left out, the scope is derived from the secret (a one-way fingerprint), which tells
   * registrations apart as long as their secrets differ; while rotating, a delivery is deduplicated
   * against every configured secret's scope, so a retry signed with the new secret does not run again.
   * `''` keys events by their id alone, unscoped: only for a store that serves one registration.
   * @default a fingerprint of the secret
   */
  namespace?: string;
  /**
   * Most bytes of request bodies the adapters read at once, over all deliveries in flight. A delivery
   * that would go beyond it is answered 503 `receiver_busy` (with `Retry-After`), so slow or stalled
   * uploads cannot hold an unbounded amount of memory. At least `maxBodyBytes`.
   * @default 64 × maxBodyBytes (64 MiB)
   */
  maxBodyBytesInFlight?: number;
  /**
   * Apply the events of one resource (`data.object` + `data.id`, within the dedup scope) in order:
   * a mode per event type or wildcard (see {@link OrderingMode}). Needs a store with the ordering
   * operations (`claimResource`, `renewResource`, `releaseResource`, `completeOrdered`); a store
   * without them fails here with a `ConfigurationError`. Events without `data.object` or `data.id`
   * are not guarded (their log record says `unordered: true`).
   */
  ordering?: OrderingRules;
  /**
   * How long a resource's watermark (the newest position handled) is remembered after its last
   * advance, with `ordering`. It must outlive every older event of the resource that can still be
   * accepted: `maxEventAgeSeconds` plus the 5 minutes a `created` may be ahead of the clock; with an
   * inbox, also the worker's retries and replays (the entry keeps its signed `created`, and a worker
   * does not refuse old entries), so it is at least `dedupTtlSeconds` then.
   * @default maxEventAgeSeconds + 300 (with an inbox, the larger of that and dedupTtlSeconds + 300)
   */
  watermarkTtlSeconds?: number;
  /**
   * Acknowledge fast, process later: verified, deduplicated events are written to this queue and
   * answered 200 once it holds them durably (503 `inbox_unavailable` when it cannot take them), and
   * handlers run in workers through `process` instead of in the request. See `service-webhooks/bullmq`.
   */
  inbox?: InboxQueue;
  /**
   * The key the door seals inbox entries with and workers check them with (the first seals, every
   * one is accepted: list the new key first while rotating). Left out, keys are derived from the
   * webhook secrets, the first secret's sealing: rotating a secret out then refuses the entries still
   * waiting under it (retries, dead letters), so keep the old secret listed until they drained, or
   * give a key of its own here, which outlives secret rotations.
   * @default derived from `secret`
   */
  inboxKey?: string | readonly string[];
}

/**
 * One webhook secret, or several while rotating (the new one first).
 *
 * @example
 * ```ts
 * const secret: SecretOption = [process.env.WEBHOOK_SECRET!, process.env.WEBHOOK_SECRET_PREVIOUS!];
 * ```
 */
export type SecretOption = string | readonly string[];

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
  /**
   * The framework's route parameters, for a receiver with `tenant` (see {@link TenantRequest}).
   * Adapters pass them only to such receivers.
   */
  params?: Readonly<Record<string, string | undefined>> | undefined;
  /** The request's URL (a path with its query, or absolute), for a receiver with `tenant`. */
  url?: string | undefined;
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

// The inbox seam: what a durable queue engine implements and what its workers pass to `process`.
/**
 * A verified event on its way into an inbox: what the door writes and a worker later reads back.
 * Plain JSON values only, so any engine can store it as it is. The door seals it (`seal`), and a
 * worker runs handlers only on an entry whose seal holds: an engine carries every field as it was
 * given, `seal` included, and the queue is no part of what a worker trusts.
 *
 * @example
 * ```ts
 * async enqueue(entry: InboxEntry, key: string) {
 *   await queue.add(key, entry); // every field, as given: the worker checks the seal
 * }
 * ```
 */
export interface InboxEntry {
  /** The event as verified and parsed at the door (of a documented type, or any other the service adds). */
  readonly event: AnyWebhookEvent | WebhookEvent;
  /** When the door first received it (Unix milliseconds): handlers see it as `ctx.receivedAt`. */
  readonly receivedAt: number;
  /** The index of the secret that verified it. */
  readonly secretIndex: number;
  /**
   * With the `tenant` option: the tenant whose secret verified the delivery. Sealed with the rest, so
   * a worker finds that tenant's secrets, seal keys and dedup scope, and no queue writer can move an
   * entry to another tenant. Absent for a receiver of one registration.
   */
  readonly tenant?: string;
  /**
   * The door's W3C trace context (`00-<trace id>-<span id>-<flags>`), written with the `telemetry`
   * option so that a worker's run joins the delivery's trace. An engine carries it as it is; a run
   * ignores one that is missing or malformed (it is never a reason to refuse the entry).
   */
  readonly traceparent?: string;
  /**
   * The door's seal: `v1.` and an HMAC-SHA256 (keyed from `inboxKey`, or from the webhook secrets, a
   * tenant's own with `tenant`) over `event`, `receivedAt`, `secretIndex`, `traceparent` and `tenant`
   * as the worker will read them. `process` refuses an entry whose seal does not hold, or that has
   * none, as `UnauthenticatedInboxEntryError` (a poison message: dead-lettered at once, no handler
   * run). An engine stores it as it is.
   */
  readonly seal?: string;
  /**
   * The attempt, for an engine that carries it in the message rather than in the queue's own state
   * (SQS's retry copies): then the run's `ctx.attempt`. Beyond the first attempt it needs
   * `attemptSeal`, written with {@link Webhooks.sealAttempt}. Engines that count attempts themselves
   * (BullMQ, pg-boss) leave it out and pass `ProcessOptions.attempt`.
   */
  readonly attempt?: number;
  /** The seal of `attempt`, bound to `seal`: see {@link Webhooks.sealAttempt}. */
  readonly attemptSeal?: string;
}

/**
 * The seam between the receiver and a durable queue engine (`service-webhooks/bullmq`, `/pg-boss`,
 * `/sqs`, or yours: `inboxConformanceSuite` in `service-webhooks/testing` checks one). With `createWebhooks({ inbox })` the receiver verifies, checks the
 * envelope and the age, deduplicates, and then calls `enqueue` instead of running handlers: it answers
 * 200 once the returned promise fulfils, and 503 `inbox_unavailable` (so the sender retries) when it
 * rejects or does not settle within `storeTimeoutMs`; 413 `payload_too_large` when it rejects with a
 * `PayloadTooLargeError` (an entry the engine can never hold, such as an SQS message over the queue's
 * size). Workers then run the handlers with {@link Webhooks.process}.
 *
 * An engine must fulfil only once the entry is durable, and must not create a second job for an id it
 * already holds (the door may enqueue twice when a first attempt timed out but landed).
 *
 * @example
 * ```ts
 * const inbox: InboxQueue = {
 *   async enqueue(entry) {
 *     await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: JSON.stringify(entry), MessageDeduplicationId: entry.event.id }));
 *   },
 * };
 * const webhooks = createWebhooks({ secret, store, inbox });
 * ```
 */
export interface InboxQueue {
  /**
   * Write the entry durably. `key` is the event's dedup key in this receiver's scope (at most 400
   * characters): use it as the job id, so that two receivers sharing a queue never merge events.
   */
  enqueue(entry: InboxEntry, key: string): Promise<void>;
  /**
   * Optional, as {@link IdempotencyStore.onBackgroundError}: the receiver calls it once with its way to
   * report, and the engine passes it what goes wrong between calls (a dropped connection, an eviction
   * policy that would lose queued events).
   */
  onBackgroundError?(listener: BackgroundErrorListener): void;
}

/**
 * How a worker runs one entry through {@link Webhooks.process}.
 *
 * @example
 * ```ts
 * await webhooks.process(entry, { attempt: job.attemptsMade + 1, signal: controller.signal });
 * ```
 */
export interface ProcessOptions {
  /** This run's attempt count, from 1: handlers see it as `ctx.attempt`. */
  readonly attempt?: number;
  /**
   * Aborting it aborts `ctx.signal` (the worker is shutting down, the job was cancelled). The claim
   * stays until the handlers settle, as after a timeout, so another worker never runs them alongside.
   */
  readonly signal?: AbortSignal;
  /** Budget of the handlers of this run; `ctx.signal` aborts at the end of it. @default 300_000 */
  readonly handlerTimeoutMs?: number;
  /**
   * A deliberate re-run (a replay from the dead-letter list) runs the handlers once more even though
   * the event was handled: give each replay its own id, under which it is itself deduplicated.
   */
  readonly replayId?: string;
  /**
   * Run an entry that carries no seal at all, as doors of versions before seals wrote them: only
   * while the entries queued before an upgrade drain (the engines' worker option
   * `acceptUnsealedEntries`). A warning is logged at most once a minute while such entries run, and
   * a `traceparent` on one is ignored. An entry whose seal is present but does not hold is refused
   * whatever this says.
   * @default false
   */
  readonly acceptUnsealed?: boolean;
}

/**
 * How {@link Webhooks.process} ended: the handlers ran and their completion was recorded, or the event
 * had already been handled (by an earlier run, or in the request before the inbox was turned on), or
 * it was stale (the `ordering` option's `'latest'`: a newer event of its resource was handled first;
 * recorded as handled without running).
 */
export type ProcessResult = 'handled' | 'duplicate' | 'stale';

/**
 * A webhook receiver: register handlers with `on`, hand deliveries to `handle`. Adapters for each
 * framework wrap `handle`; nothing else decides what the sender is answered.
 *
 * @example
 * ```ts
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! });
 * webhooks.on('user.created', async (event) => { await db.users.insert(event.data); });
 * const { status, headers, body } = await webhooks.handle({ body: rawBody, headers: request.headers });
 * ```
 */
export interface Webhooks<Schemas extends EventSchemas = NoSchemas, Tenant extends string = never> {
  /**
   * Run `handler` for one event type, several, or every type of a resource (`'payment.*'`). Handlers of
   * one event run one after another in registration order; the answer waits for all of them. With a
   * schema for the type (`createWebhooks({ schemas })`), the handler receives the schema's output.
   */
  on<Arg extends string | readonly string[]>(
    name: EventNameArgument<Arg>,
    handler: WebhookHandler<EventForArgument<Arg, Schemas>, ContextFor<Tenant>>,
  ): Webhooks<Schemas, Tenant>;
  /** Run `handler` for every documented event type. */
  onAny(
    handler: WebhookHandler<SchemaEventMap<Schemas>[WebhookEventName], ContextFor<Tenant>>,
  ): Webhooks<Schemas, Tenant>;
  /** Be told about failures on the receiving side (handlers, timeouts, store, lost leases, adapter setup). */
  onError(listener: ErrorListener): Webhooks<Schemas, Tenant>;
  /**
   * Be told of each stale event (with an `ordering` rule `'latest'`): one whose handlers did not run
   * because a newer event of its resource was handled first.
   */
  onStale(listener: StaleListener): Webhooks<Schemas>;
  /**
   * Answer one delivery: size, signature, envelope, age, claim, handlers, completion, in that order.
   * Never throws; every outcome is a response from the status table.
   */
  handle(input: HandleInput): Promise<WebhookResponse>;
  /**
   * Verify and parse a delivery without deduplicating or running handlers. Throws the typed error of
   * the status table (MissingSignatureError, InvalidSignatureError, InvalidRequestError, ...; with
   * `schemas`, EventSchemaError or SchemaTimeoutError).
   */
  verifyAndParse(body: RawBody, signatureHeader: string | null | undefined): Promise<WebhookEvent>;
  /** The answer for an error an adapter found itself (body too large, raw body gone), reported and logged. */
  reject(error: WebhookError): WebhookResponse;
  /**
   * Run the handlers of an event an inbox holds (see `createWebhooks({ inbox })`), in a worker, under
   * the same claim, renewal and completion as in the request: of every run of one event id (queue
   * redelivery, a worker killed mid-handler, a duplicate the sender sent), the handlers complete once.
   * Fulfils `'handled'` or `'duplicate'`; rejects with `EventInProgressError` (another worker holds the
   * event: retry after its lease; not reported, as it is expected after a crash), or with
   * `HandlerFailedError`, `HandlerTimeoutError`, `SchemaTimeoutError` (the type's schema did not
   * settle within `storeTimeoutMs`) or `StoreUnavailableError`, each reported to `onError` first. The
   * engine retries on any of these; an `InvalidInboxEntryError` (no event, or one that fails the door's
   * envelope check: a poison message, also reported) or an `EventSchemaError` (the event fails its
   * type's schema, also reported) must be dead-lettered at once instead, since no retry can fix it, and
   * so must `UnauthenticatedInboxEntryError`, a subclass of the first (no seal of the door, or one that
   * no longer holds: whoever wrote it to the queue was not the door). No handler runs on such an entry,
   * and its `traceparent` is followed only when the seal holds.
   *
   * @example
   * ```ts
   * worker.process(async (job) => webhooks.process(job.data, { attempt: job.attemptsMade + 1 }));
   * ```
   */
  process(entry: InboxEntry, options?: ProcessOptions): Promise<ProcessResult>;
  /**
   * The entry with `attempt` and its seal, for an engine that carries the attempt in the message
   * (SQS writes a copy per retry): `process` then takes `entry.attempt` as the run's attempt, and
   * refuses a copy whose attempt was changed. The seal is bound to the entry's own `seal`, which it
   * leaves as it is: an entry without one gets `attempt` alone (and is refused unless
   * `acceptUnsealed`), so nothing unsealed is ever sealed here.
   *
   * @example
   * ```ts
   * const retry = await webhooks.sealAttempt(entry, attempt + 1);
   * await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: JSON.stringify(retry) }));
   * ```
   */
  sealAttempt(entry: InboxEntry, attempt: number): Promise<InboxEntry>;
  /**
   * Tell the `onError` listeners (stderr without listeners and logger) about a failure found outside
   * `handle` and `process`, such as an inbox engine dead-lettering an event.
   *
   * @example
   * ```ts
   * webhooks.report(new EventDeadLetteredError(entry.event.id, 20, { cause }), entry.event);
   * ```
   */
  report(error: WebhookError, event?: AnyWebhookEvent | WebhookEvent): void;
  /** The `logger` option, for engines that log what they do beside the deliveries. */
  readonly logger: WebhookLogger | undefined;
  /** The `telemetry` option, for engines that report their queue's gauges and dead letters to it. */
  readonly telemetry: WebhookTelemetry | undefined;
  /** The largest body accepted, for adapters that stop reading past it. */
  readonly maxBodyBytes: number;
  /** The handler budget, for adapters whose platform has a shorter one. */
  readonly handlerTimeoutMs: number;
  /**
   * The bytes of bodies adapters may read at once (`maxBodyBytesInFlight`), shared by this receiver's
   * deliveries: adapters take each chunk before keeping it and answer `ReceiverBusyError` when it does
   * not fit.
   */
  readonly bodyBudget: BodyBudget;
}

/**
 * Any receiver, with `tenant` or without: what the adapters take. (A receiver of one registration
 * and one with tenants differ in their handlers' context, so neither type is the other's.)
 *
 * @example
 * ```ts
 * function mount(app: Express, webhooks: AnyWebhooks) {
 *   app.post('/webhooks/:account', expressWebhooks(webhooks));
 * }
 * ```
 */
export type AnyWebhooks = Webhooks | Webhooks<NoSchemas, string>;
