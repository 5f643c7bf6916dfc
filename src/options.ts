import { ConfigurationError } from './errors.js';
import { OrderingGuard } from './ordering.js';
import { EventSchemaChecks } from './schema-check.js';
import { secretList } from './secrets.js';
import { SENDER_SCHEDULE } from './sender-schedule.js';
import type { WebhookTelemetry } from './telemetry.js';
import type { TenantCacheSettings } from './tenant-directory.js';
import { type TenantReader, tenantReader } from './tenant-source.js';
import type {
  IdempotencyStore,
  InboxQueue,
  SecretOption,
  TenantOptions,
  WebhookLogger,
  WebhooksOptions,
} from './types.js';

/** The sender retries first after one minute: a claim must end before then. */
const FIRST_RETRY_SECONDS = SENDER_SCHEDULE.retryDelaysSeconds[0];
const SENDER_TIMEOUT_MS = SENDER_SCHEDULE.attemptTimeoutMs;

/** The defaults, each derived from the sender's schedule (the docs' Options page gives the reasons). */
export const DEFAULTS = {
  maxBodyBytes: 1_048_576,
  leaseSeconds: 45,
  dedupTtlSeconds: 86_400,
  maxEventAgeSeconds: 86_400,
  handlerTimeoutMs: 25_000,
  storeTimeoutMs: 2_000,
  onStoreError: 'reject',
} as const;

/** How many bodies of the largest size may be read at once by default. */
const BODY_BYTES_IN_FLIGHT_FACTOR = 64;

/** An explicit dedup scope: a name, or '' for the unscoped keys of earlier versions. */
const NAMESPACE = /^[\w.\-/]{0,64}$/;

/** Options after defaults and validation. */
export interface ResolvedOptions {
  /** The secrets, or a function that gives them on first use. */
  readonly secret: readonly string[] | (() => SecretOption | Promise<SecretOption>);
  readonly store: IdempotencyStore;
  readonly maxBodyBytes: number;
  readonly maxEventAgeSeconds: number;
  readonly leaseSeconds: number;
  readonly dedupTtlSeconds: number;
  readonly handlerTimeoutMs: number;
  readonly storeTimeoutMs: number;
  readonly onStoreError: 'reject' | 'process';
  readonly logger: WebhookLogger | undefined;
  /** `undefined` when left out: the scope is then derived from the secrets. */
  readonly namespace: string | undefined;
  readonly maxBodyBytesInFlight: number;
  readonly inbox: InboxQueue | undefined;
  readonly telemetry: WebhookTelemetry | undefined;
  readonly schemas: EventSchemaChecks | undefined;
  /** The `inboxKey` option as a list; `undefined`: the inbox keys are derived from the secrets. */
  readonly inboxKeys: readonly string[] | undefined;
  /** The `ordering` option, checked against the store; `undefined` without it (no guard, no cost). */
  readonly ordering: OrderingGuard | undefined;
  /** The `tenant` option, checked; `undefined` for a receiver of one registration. */
  readonly tenant: ResolvedTenantOptions | undefined;
}

/** How far ahead of the receiver's clock a signed `created` may be (see `delivery-verifier.ts`). */
const CREATED_AHEAD_SECONDS = 300;

/**
 * The `ordering` option (given) and its watermark TTL. A watermark must outlive every older event of its
 * resource that can still be accepted: one signed up to `maxEventAgeSeconds` ago, or up to five
 * minutes ahead of this clock; with an inbox, a worker runs entries (retries, replays) without an age
 * limit for as long as their ids are remembered, so `dedupTtlSeconds` bounds it there.
 */
function resolveOrdering(
  ordering: NonNullable<WebhooksOptions['ordering']>,
  options: WebhooksOptions,
  store: IdempotencyStore,
  maxEventAgeSeconds: number,
  dedupTtlSeconds: number,
): OrderingGuard {
  const shortest =
    Math.max(maxEventAgeSeconds, options.inbox === undefined ? 0 : dedupTtlSeconds) + CREATED_AHEAD_SECONDS;
  const watermarkTtlSeconds = positiveInteger('watermarkTtlSeconds', options.watermarkTtlSeconds, shortest);
  if (watermarkTtlSeconds < shortest) {
    throw new ConfigurationError(
      `\`watermarkTtlSeconds\` (${watermarkTtlSeconds}) is shorter than an older event of a resource can still arrive (${shortest} s: ${options.inbox === undefined ? 'maxEventAgeSeconds' : 'dedupTtlSeconds, with an inbox,'} plus the 300 s a \`created\` may be ahead): such an event would run after a newer one. Use at least ${shortest}.`,
    );
  }
  return new OrderingGuard(ordering, store, watermarkTtlSeconds * 1000);
}

/** The `tenant` option after defaults and checks. */
export interface ResolvedTenantOptions extends TenantCacheSettings {
  readonly read: TenantReader;
  readonly secret: (tenant: string) => unknown;
}

/** Tenant defaults: a rotation or a removal takes effect within five minutes; a prober's id is kept for one. */
export const TENANT_DEFAULTS = {
  cacheTtlSeconds: 300,
  maxTenants: 1_000,
  unknownTtlSeconds: 60,
} as const;

/** No secret of its own: each tenant's comes from `tenant.secret`. */
const NO_SECRET_OF_ITS_OWN = (): never => {
  throw new ConfigurationError('A receiver with `tenant` has no secret of its own: each tenant has its own.');
};

/** The `tenant` option, given (`resolveOptions` calls this only then). */
function resolveTenant(options: WebhooksOptions & { tenant?: unknown }): ResolvedTenantOptions {
  const tenant = options.tenant as Partial<TenantOptions> | null;
  if (typeof tenant !== 'object' || tenant === null || typeof tenant.secret !== 'function') {
    throw new ConfigurationError(
      '`tenant` needs `from` (where the tenant is read) and `secret` (a function of the tenant that gives its secrets).',
    );
  }
  if (options.secret !== undefined) {
    throw new ConfigurationError(
      "Give `secret` or `tenant`, not both: with `tenant`, each tenant's secrets come from `tenant.secret`.",
    );
  }
  const unknownTtlSeconds = tenant.unknownTtlSeconds ?? TENANT_DEFAULTS.unknownTtlSeconds;
  if (!Number.isSafeInteger(unknownTtlSeconds) || unknownTtlSeconds < 0) {
    throw new ConfigurationError(
      `\`tenant.unknownTtlSeconds\` must be a whole number of seconds, 0 or more; got ${String(unknownTtlSeconds)}.`,
    );
  }
  return Object.freeze({
    read: tenantReader(tenant.from),
    secret: tenant.secret as (tenant: string) => unknown,
    cacheTtlMs:
      positiveInteger('tenant.cacheTtlSeconds', tenant.cacheTtlSeconds, TENANT_DEFAULTS.cacheTtlSeconds) *
      1000,
    maxTenants: positiveInteger('tenant.maxTenants', tenant.maxTenants, TENANT_DEFAULTS.maxTenants),
    unknownTtlMs: unknownTtlSeconds * 1000,
  });
}

function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new ConfigurationError(`\`${name}\` must be a positive whole number; got ${String(value)}.`);
  }
  return value;
}

/** The `inboxKey` option: like a secret, never empty nor blank, since a MAC keyed with one is anyone's. */
function resolveInboxKeys(inboxKey: unknown): readonly string[] {
  const keys = typeof inboxKey === 'string' ? [inboxKey] : inboxKey;
  if (
    !Array.isArray(keys) ||
    keys.length === 0 ||
    keys.some((key) => typeof key !== 'string' || key.trim().length === 0)
  ) {
    throw new ConfigurationError(
      '`inboxKey` must be a non-blank string, or a list of them while rotating (the new one first); leave it out to derive the inbox keys from the webhook secrets.',
    );
  }
  return Object.freeze([...keys]);
}

/** The store is required here: the root's `createWebhooks` gives a `MemoryStore` when none is passed. */
function resolveStore(store: unknown): IdempotencyStore {
  if (store === undefined) {
    throw new ConfigurationError(
      "`store` is missing: `createWebhooks` from 'service-webhooks/core' needs one (RedisStore, DynamoDBStore, PostgresStore or your own). For the in-process MemoryStore, import `createWebhooks` from 'service-webhooks'.",
    );
  }
  const candidate = store as Partial<IdempotencyStore>;
  for (const method of ['claim', 'complete', 'release'] as const) {
    if (typeof candidate?.[method] !== 'function') {
      throw new ConfigurationError(
        `\`store\` must implement IdempotencyStore: its \`${method}\` method is missing. See https://service-webhooks.github.io/service-webhooks/stores/custom.html`,
      );
    }
  }
  return store as IdempotencyStore;
}

/** Apply defaults and refuse combinations that would lose or double-handle events, saying what to change. */
export function resolveOptions(options: WebhooksOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError('createWebhooks needs an options object: createWebhooks({ secret }).');
  }
  // Each option a receiver leaves out is passed over here, its resolver never called: a Lambda's cold
  // start compiles every function it calls once, and these (tenant, ordering, inbox, telemetry) are
  // over 2 KB of checks that a receiver without them would compile only to return undefined.
  const tenant = (options as { tenant?: unknown }).tenant === undefined ? undefined : resolveTenant(options);
  // A function is called on first use, not here: that is its point (a build without the secret).
  const secret = tenant
    ? NO_SECRET_OF_ITS_OWN
    : typeof options.secret === 'function'
      ? options.secret
      : secretList(options.secret);
  const maxBodyBytes = positiveInteger('maxBodyBytes', options.maxBodyBytes, DEFAULTS.maxBodyBytes);
  const leaseSeconds = positiveInteger('leaseSeconds', options.leaseSeconds, DEFAULTS.leaseSeconds);
  const dedupTtlSeconds = positiveInteger(
    'dedupTtlSeconds',
    options.dedupTtlSeconds,
    DEFAULTS.dedupTtlSeconds,
  );
  const maxEventAgeSeconds = positiveInteger(
    'maxEventAgeSeconds',
    options.maxEventAgeSeconds,
    Math.min(DEFAULTS.maxEventAgeSeconds, dedupTtlSeconds),
  );
  const handlerTimeoutMs = positiveInteger(
    'handlerTimeoutMs',
    options.handlerTimeoutMs,
    DEFAULTS.handlerTimeoutMs,
  );
  const storeTimeoutMs = positiveInteger('storeTimeoutMs', options.storeTimeoutMs, DEFAULTS.storeTimeoutMs);
  const onStoreError = options.onStoreError ?? DEFAULTS.onStoreError;

  if (maxEventAgeSeconds > dedupTtlSeconds) {
    throw new ConfigurationError(
      `\`dedupTtlSeconds\` (${dedupTtlSeconds}) is shorter than \`maxEventAgeSeconds\` (${maxEventAgeSeconds}): a replay could arrive after its id was forgotten and run twice. Raise dedupTtlSeconds to at least ${maxEventAgeSeconds} or lower maxEventAgeSeconds.`,
    );
  }
  if (leaseSeconds >= FIRST_RETRY_SECONDS) {
    throw new ConfigurationError(
      `\`leaseSeconds\` (${leaseSeconds}) must be below ${FIRST_RETRY_SECONDS}: the sender retries after one minute, and a claim left by a crashed worker must have expired by then. Use at most ${FIRST_RETRY_SECONDS - 1}.`,
    );
  }
  if (handlerTimeoutMs >= SENDER_TIMEOUT_MS) {
    throw new ConfigurationError(
      `\`handlerTimeoutMs\` (${handlerTimeoutMs}) must be below the sender's ${SENDER_TIMEOUT_MS} ms timeout, or the sender gives up before the receiver answers. Use at most ${SENDER_TIMEOUT_MS - 5_000} to leave time for the store.`,
    );
  }
  if (leaseSeconds * 1000 <= handlerTimeoutMs) {
    throw new ConfigurationError(
      `\`leaseSeconds\` (${leaseSeconds}) must be longer than \`handlerTimeoutMs\` (${handlerTimeoutMs} ms): a claim that expires while its handler still runs lets a retry run it a second time.`,
    );
  }
  if (storeTimeoutMs >= SENDER_TIMEOUT_MS) {
    throw new ConfigurationError(
      `\`storeTimeoutMs\` (${storeTimeoutMs}) must be well below the sender's ${SENDER_TIMEOUT_MS} ms timeout; the default is ${DEFAULTS.storeTimeoutMs}.`,
    );
  }
  if (onStoreError !== 'reject' && onStoreError !== 'process') {
    throw new ConfigurationError(
      `\`onStoreError\` must be 'reject' or 'process'; got ${String(onStoreError)}.`,
    );
  }
  const logger = options.logger;
  if (
    logger !== undefined &&
    (typeof logger.info !== 'function' ||
      typeof logger.error !== 'function' ||
      typeof logger.warn !== 'function')
  ) {
    throw new ConfigurationError(
      '`logger` needs info, warn and error methods (console and pino loggers fit).',
    );
  }
  const namespace = options.namespace;
  if (namespace !== undefined && (typeof namespace !== 'string' || !NAMESPACE.test(namespace))) {
    throw new ConfigurationError(
      `\`namespace\` must be letters, digits, \`_\`, \`-\`, \`.\` or \`/\`, at most 64 (or '' for unscoped keys); got ${JSON.stringify(namespace)}.`,
    );
  }
  const maxBodyBytesInFlight = positiveInteger(
    'maxBodyBytesInFlight',
    options.maxBodyBytesInFlight,
    BODY_BYTES_IN_FLIGHT_FACTOR * maxBodyBytes,
  );
  if (maxBodyBytesInFlight < maxBodyBytes) {
    throw new ConfigurationError(
      `\`maxBodyBytesInFlight\` (${maxBodyBytesInFlight}) is below \`maxBodyBytes\` (${maxBodyBytes}): a delivery of the largest accepted size could never be read. Raise it to at least ${maxBodyBytes}.`,
    );
  }
  const store = resolveStore(options.store);
  const ordering = options.ordering;
  if (ordering === undefined && options.watermarkTtlSeconds !== undefined) {
    throw new ConfigurationError('`watermarkTtlSeconds` only applies with the `ordering` option.');
  }
  return Object.freeze({
    secret,
    namespace,
    maxBodyBytesInFlight,
    store,
    maxBodyBytes,
    maxEventAgeSeconds,
    leaseSeconds,
    dedupTtlSeconds,
    handlerTimeoutMs,
    storeTimeoutMs,
    onStoreError,
    logger,
    inbox: options.inbox === undefined ? undefined : resolveInbox(options.inbox),
    inboxKeys: options.inboxKey === undefined ? undefined : resolveInboxKeys(options.inboxKey),
    tenant,
    telemetry: options.telemetry === undefined ? undefined : resolveTelemetry(options.telemetry),
    schemas: options.schemas === undefined ? undefined : new EventSchemaChecks(options.schemas),
    ordering:
      ordering === undefined
        ? undefined
        : resolveOrdering(ordering, options, store, maxEventAgeSeconds, dedupTtlSeconds),
  });
}

function resolveTelemetry(telemetry: unknown): WebhookTelemetry {
  const plugin = telemetry as Partial<WebhookTelemetry> | null;
  if (typeof plugin?.startDelivery !== 'function' || typeof plugin.startInboxRun !== 'function') {
    throw new ConfigurationError(
      '`telemetry` must be a telemetry plug-in, such as `openTelemetry()` from service-webhooks/opentelemetry gives.',
    );
  }
  return plugin as WebhookTelemetry;
}

function resolveInbox(inbox: unknown): InboxQueue {
  if (typeof (inbox as Partial<InboxQueue> | null)?.enqueue !== 'function') {
    throw new ConfigurationError(
      '`inbox` must have an `enqueue(entry, key)` method, such as the queue `bullmqInbox()` from service-webhooks/bullmq gives.',
    );
  }
  return inbox as InboxQueue;
}
