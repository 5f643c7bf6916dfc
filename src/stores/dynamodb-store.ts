/**
 * `service-webhooks/dynamodb`: an idempotency store shared by every process that receives deliveries,
 * kept in an Amazon DynamoDB table through a `DynamoDBClient` the application owns.
 *
 * @example
 * ```ts
 * import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
 * import { createWebhooks } from 'service-webhooks';
 * import { DynamoDBStore } from 'service-webhooks/dynamodb';
 *
 * const client = new DynamoDBClient({
 *   maxAttempts: 1,
 *   requestHandler: { connectionTimeout: 500, requestTimeout: 1_000, throwOnRequestTimeout: true },
 * });
 * const webhooks = createWebhooks({
 *   secret: process.env.WEBHOOK_SECRET!,
 *   store: new DynamoDBStore({ client, tableName: 'webhook-events' }),
 * });
 * ```
 * @packageDocumentation
 */
import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  type ClaimResult,
  type CompleteResult,
  ConfigurationError,
  type IdempotencyStore,
  type RenewResult,
  type ResourceClaimResult,
  StoreUnavailableError,
} from 'service-webhooks/core';
import { keyEncoder, wholeMilliseconds } from './store-encoding.js';

/** `%` and unpaired surrogates escaped: DynamoDB stores strings as UTF-8. */
const encodeKey = keyEncoder();

/**
 * The attributes the store writes: one item per store key. Create the table with `partitionKey` as its
 * only key (type String, no sort key) and turn DynamoDB's Time to Live on for `timeToLive`, as
 * {@link DynamoDBStore.createTable} does.
 *
 * | attribute | type | holds |
 * |---|---|---|
 * | `pk` | S | the store key (dedup scope and event id), after `keyPrefix` |
 * | `state` | S | `in_progress` or `completed` |
 * | `token` | S | the owning delivery attempt, only while `in_progress` |
 * | `expiresAtMs` | N | end of the lease (in progress) or of the memory (completed), epoch ms |
 * | `expiresAt` | N | the same instant in epoch seconds, rounded up: the TTL attribute |
 *
 * @example
 * ```ts
 * // AWS CDK
 * new dynamodb.Table(this, 'WebhookEvents', {
 *   partitionKey: { name: DYNAMODB_STORE_ATTRIBUTES.partitionKey, type: dynamodb.AttributeType.STRING },
 *   timeToLiveAttribute: DYNAMODB_STORE_ATTRIBUTES.timeToLive,
 *   billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
 * });
 * ```
 */
export const DYNAMODB_STORE_ATTRIBUTES = Object.freeze({
  /** The table's partition key (type String). */
  partitionKey: 'pk',
  /** The attribute DynamoDB's Time to Live deletes by (type Number, epoch seconds). */
  timeToLive: 'expiresAt',
} as const);

/**
 * Options of {@link DynamoDBStore}.
 *
 * @example
 * ```ts
 * new DynamoDBStore({ client: new DynamoDBClient({ maxAttempts: 1 }), tableName: 'webhook-events', keyPrefix: 'billing:' });
 * ```
 */
export interface DynamoDBStoreOptions {
  /**
   * A `DynamoDBClient` (from `@aws-sdk/client-dynamodb` v3) the application created and owns: the store
   * never destroys it. Create it so that a call fails fast while DynamoDB is unreachable or slow, well
   * within the receiver's `storeTimeoutMs` (2 s by default): `maxAttempts: 1` and
   * `requestHandler: { connectionTimeout: 500, requestTimeout: 1_000, throwOnRequestTimeout: true }`
   * (without `throwOnRequestTimeout` the SDK only logs at `requestTimeout`). A call waiting for one of the
   * SDK's sockets (50 by default) counts against both timeouts: give it at least as many as your peak
   * of concurrent deliveries (`httpsAgent: { maxSockets: 200 }` in `requestHandler`).
   */
  client: DynamoDBClient;
  /**
   * The table (or its ARN): partition key `pk` of type String, no sort key, Time to Live on
   * `expiresAt`. See {@link DYNAMODB_STORE_ATTRIBUTES} and {@link DynamoDBStore.createTable}.
   */
  tableName: string;
  /**
   * Put before every key, to share one table between several applications. At most 128 bytes (UTF-8),
   * so the longest key fits DynamoDB's 2,048-byte partition key.
   * @default ''
   */
  keyPrefix?: string;
}

/**
 * Options of {@link DynamoDBStore.createTable}.
 *
 * @example
 * ```ts
 * await store.createTable({ timeToLive: false }); // an emulator without UpdateTimeToLive (dynalite)
 * ```
 */
export interface CreateDynamoDBTableOptions {
  /**
   * Turn DynamoDB's Time to Live on for `expiresAt` (UpdateTimeToLive), so ended records are deleted.
   * Correctness never depends on it; without it the table only grows.
   * @default true
   */
  timeToLive?: boolean;
  /**
   * How long to wait for a new table to become ACTIVE.
   * @default 120_000
   */
  waitMs?: number;
}

type Sdk = typeof import('@aws-sdk/client-dynamodb');
type Item = Record<string, AttributeValue>;
/** What `send` answers, narrowed to what the store reads. */
type Sent = {
  Item?: Item;
  Attributes?: Item;
  Table?: { TableStatus?: string };
  TimeToLiveDescription?: TtlDescription;
};
/** Why DynamoDB cancelled a transaction, one reason per item in the transaction's order. */
type CancellationReason = { Code?: string; Item?: Item };
type TtlDescription = { TimeToLiveStatus?: string; AttributeName?: string };
/** A command of the SDK, typed loosely: each one is sent and its answer read as {@link Sent}. */
type Command = object;

/**
 * The SDK's command classes, loaded on first use rather than imported: loading this subpath must not
 * load (or require the installation of) the SDK, and an application that passes a client has already
 * loaded it, so the import is served from the module cache.
 */
let sdk: Promise<Sdk> | undefined;
let loadedSdk: Sdk | undefined;
function loadSdk(): Promise<Sdk> {
  sdk ??= import('@aws-sdk/client-dynamodb').then((module) => {
    loadedSdk = module;
    return module;
  });
  return sdk;
}

const IN_PROGRESS = 'in_progress';
const COMPLETED = 'completed';

/**
 * Placeholders for every attribute (`state` and `token` are DynamoDB reserved words). Each expression
 * below names exactly the placeholders it uses: DynamoDB refuses unused ones.
 */
const NAMES = { '#k': 'pk', '#s': 'state', '#t': 'token', '#e': 'expiresAtMs' } as const;

/**
 * A claim takes an absent key, or one whose lease or memory ended by the writer's clock. Conditional
 * writes on one item are serialised by DynamoDB, so of concurrent claims exactly one passes.
 */
const CLAIM_CONDITION = 'attribute_not_exists(#k) OR #e <= :now';
/**
 * Complete and renew: the holder (even after its lease ended, as long as nobody took the item over),
 * or anyone when no live record exists. A completed item has no token, so completing twice fails.
 */
const HOLDER_CONDITION = 'attribute_not_exists(#k) OR #e <= :now OR (#s = :held AND #t = :token)';
const RELEASE_CONDITION = '#s = :held AND #t = :token';

/**
 * Where a resource's item is kept: its partition key is the prefix, this marker and the encoded
 * resource. An encoded key never holds `%r` (`%` is only written as `%` and two hex digits, or `%u`),
 * so a resource item never meets an event's, whatever the two strings are.
 */
const RESOURCE_MARKER = '%r:';

/**
 * The resource item's attributes, beside `pk`: `token` holds the lease (with `leaseEndsAtMs`), absent
 * when nobody does; `watermark` is the newest position completed, remembered until
 * `watermarkEndsAtMs`; `expiresAt` (the TTL, epoch seconds) is never below any end the item holds, so
 * Time to Live never deletes a live lease or watermark.
 */
const RESOURCE_NAMES = {
  '#t': 'token',
  '#le': 'leaseEndsAtMs',
  '#w': 'watermark',
  '#we': 'watermarkEndsAtMs',
  '#x': 'expiresAt',
} as const;

/** A resource's lease is free: never taken, ended by completeOrdered or a release, or run out. */
const LEASE_FREE = '(attribute_not_exists(#le) OR #le <= :now)';

/**
 * DynamoDB's update expressions have no `max`, and the TTL must stay the largest end the item holds:
 * so each write that could raise it comes in two versions, one for an item whose TTL already covers
 * the new end (kept as it is) and one for an item whose TTL falls short (raised), each with the
 * condition that says which it is. The first tried is the likelier; a failed condition says which
 * was right, and the other is sent (see {@link DynamoDBStore.claimResource}).
 */
const TTL_COVERS = '(attribute_not_exists(#x) OR #x >= :ends)';
const TTL_SHORT = '#x < :ends';

/** The parts of completeOrdered's resource update, each a condition that says it is the right one. */
interface ResourceShape {
  /** `token` holds the lease (live or not): completing ends it. */
  holds: boolean;
  /** The watermark is absent, forgotten or below `position`: it becomes `position`. */
  advances: boolean;
  /** The watermark's memory ends before `watermarkTtlMs` from now: it is extended. */
  extends: boolean;
  /** The TTL attribute is below the watermark's new end: it is raised. */
  raisesTtl: boolean;
}

/** How many claimed resource items a store remembers as hints for completeOrdered. */
const MAX_CLAIMED_ITEMS = 10_000;

/** What a completion by the lease's holder of a newer event finds: the version tried without a hint. */
const LIKELY_SHAPE: ResourceShape = { holds: true, advances: true, extends: true, raisesTtl: true };

function resourceShapeOf(item: Item | undefined, token: string, now: number, position: number, ends: number) {
  const number = (name: string) => {
    const value = item?.[name]?.N;
    return value === undefined ? undefined : Number(value);
  };
  const watermarkEnds = number('watermarkEndsAtMs');
  const watermark = number('watermark');
  const ttl = number('expiresAt');
  const remembered = watermarkEnds !== undefined && watermarkEnds > now && watermark !== undefined;
  return {
    holds: item?.token?.S === token,
    advances: !remembered || (watermark as number) < position,
    extends: watermarkEnds === undefined || watermarkEnds < ends,
    raisesTtl: ttl === undefined || ttl < Math.ceil(ends / 1000),
  } satisfies ResourceShape;
}

/** The condition and update of completeOrdered's resource item in one shape. */
function resourceUpdate(shape: ResourceShape) {
  const conditions = [
    shape.holds ? '#t = :token' : '(attribute_not_exists(#t) OR #t <> :token)',
    shape.advances
      ? '(attribute_not_exists(#we) OR #we <= :now OR #w < :position)'
      : '(#we > :now AND #w >= :position)',
    shape.extends ? '(attribute_not_exists(#we) OR #we < :ends)' : '#we >= :ends',
    shape.raisesTtl ? '(attribute_not_exists(#x) OR #x < :endsSeconds)' : '#x >= :endsSeconds',
  ];
  const set: string[] = [];
  if (shape.advances) set.push('#w = :position');
  if (shape.extends) set.push('#we = :ends');
  if (shape.raisesTtl) set.push('#x = :endsSeconds');
  // An update must change something: a completion that changes nothing on the resource rewrites the
  // watermark it keeps (present, as that shape's condition requires).
  if (set.length === 0 && !shape.holds) set.push('#w = #w');
  const update = [set.length > 0 ? `SET ${set.join(', ')}` : '', shape.holds ? 'REMOVE #t, #le' : '']
    .filter(Boolean)
    .join(' ');
  return { ConditionExpression: conditions.join(' AND '), UpdateExpression: update };
}

/** The placeholders an expression uses, out of those given: DynamoDB refuses unused ones. */
function usedIn<T>(expressions: string, placeholders: Record<string, T>): Record<string, T> {
  return Object.fromEntries(
    Object.entries(placeholders).filter(([name]) => new RegExp(`${name}(?![A-Za-z0-9_])`).test(expressions)),
  );
}

/**
 * How many versions of an update completeOrdered and claimResource send before giving the call up as
 * unavailable (the sender then retries). Each round that fails does so because another call changed
 * the item meanwhile, so some call always gets through; concurrent completions of one resource (never
 * under `serialize`, where only the lease's holder completes) may each need several rounds.
 */
const SHAPE_ROUNDS = 10;

/**
 * When a watermark's memory ends: `watermarkTtlMs` from now, rounded up to a tenth of a second, so that
 * completions within the same tenth ask for the same end and do not send each other back to another
 * version of the update. Not to a whole second: a short memory would then live up to a second longer
 * than asked (the conformance suite's 300 ms watermark outlived its 700 ms wait in one run of three).
 */
function memoryEnds(now: number, memoryMs: number): number {
  return Math.ceil((now + memoryMs) / MEMORY_GRID_MS) * MEMORY_GRID_MS;
}

/** The grid a watermark's end is rounded up to (see memoryEnds). */
const MEMORY_GRID_MS = 100;

/**
 * The idempotency store on Amazon DynamoDB, for several processes, machines or Lambda functions. One
 * item per key; claim, complete, renew and release are each one conditional write (`PutItem` or
 * `DeleteItem` with a `ConditionExpression`), so DynamoDB decides atomically who holds an event,
 * including the takeover of a lease left by a crashed worker. A claim that finds the event taken learns
 * whether it is in progress or completed from the same call (`ReturnValuesOnConditionCheckFailure`);
 * only DynamoDB implementations that ignore that parameter (dynalite) cost a second, consistent read.
 *
 * **Clocks.** DynamoDB conditions have no server clock, so leases and memories are compared with the
 * clock of the process that writes (`Date.now()`). A process whose clock runs ahead of the others sees
 * their leases end early by as much (and may take over an event still being handled); one that runs
 * behind keeps seeing ended leases as live. Keep the receivers' clocks in sync (NTP, such as chrony; on
 * AWS, the Amazon Time Sync Service): a skew far below `leaseSeconds` (45 s) is harmless.
 *
 * **Expiry.** The `expiresAtMs` attribute decides; DynamoDB's Time to Live (`expiresAt`, epoch seconds)
 * only removes ended items, typically within days, and nothing depends on when it does.
 *
 * Every failed call (unreachable, throttled, missing table, timed out) throws `StoreUnavailableError`
 * with the SDK's error as `cause`: the sender is answered 503 `store_unavailable` and retries later.
 * Pay-per-request capacity (on-demand) suits webhook traffic; each delivery costs two writes.
 *
 * @example
 * ```ts
 * import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
 * import { DynamoDBStore } from 'service-webhooks/dynamodb';
 *
 * const store = new DynamoDBStore({
 *   client: new DynamoDBClient({
 *     maxAttempts: 1,
 *     requestHandler: { connectionTimeout: 500, requestTimeout: 1_000, throwOnRequestTimeout: true },
 *   }),
 *   tableName: process.env.WEBHOOK_TABLE!,
 * });
 * ```
 */
export class DynamoDBStore implements IdempotencyStore {
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #prefix: string;
  /**
   * The resource items as this store's claimResource left them, by token and resource, until the
   * holder's completeOrdered or releaseResource: the item says which version of completeOrdered's
   * update fits (a stale event's completion keeps the watermark; a watermark about to be forgotten
   * needs its TTL raised), so that the first transaction sent is the right one. Only a hint: the
   * transaction's conditions still decide. Bounded: the oldest go first.
   */
  readonly #claimedItems = new Map<string, Item>();

  constructor(options: DynamoDBStoreOptions) {
    const client: unknown = options?.client;
    if (typeof (client as { send?: unknown } | undefined)?.send !== 'function') {
      throw new ConfigurationError(
        "DynamoDBStore needs a DynamoDBClient: new DynamoDBStore({ client: new DynamoDBClient({ maxAttempts: 1 }), tableName: 'webhook-events' }).",
      );
    }
    const table = options.tableName;
    if (
      typeof table !== 'string' ||
      !(/^[a-zA-Z0-9_.-]{3,255}$/.test(table) || /^arn:[^\s]{1,1020}$/.test(table))
    ) {
      throw new ConfigurationError(
        `DynamoDBStore \`tableName\` must be a DynamoDB table name (3 to 255 of a-z, A-Z, 0-9, _, -, .) or a table ARN; got ${JSON.stringify(table)}.`,
      );
    }
    const prefix = options.keyPrefix ?? '';
    if (typeof prefix !== 'string' || new TextEncoder().encode(prefix).length > 128) {
      throw new ConfigurationError(
        `DynamoDBStore \`keyPrefix\` must be a string of at most 128 bytes; got ${JSON.stringify(prefix)}.`,
      );
    }
    this.#client = client as DynamoDBClient;
    this.#table = table;
    this.#prefix = prefix;
    // Start loading the command classes now, so the first delivery does not wait for them; a failure
    // is reported by the first call.
    loadSdk().catch(() => {});
  }

  async claim(key: string, token: string, leaseMs: number): Promise<ClaimResult> {
    const now = Date.now();
    const item = this.#item(key, IN_PROGRESS, now + wholeMilliseconds(leaseMs), token);
    const answer = await this.#send('claim', (sdk) => {
      return new sdk.PutItemCommand({
        TableName: this.#table,
        Item: item,
        ConditionExpression: CLAIM_CONDITION,
        ExpressionAttributeNames: { '#k': NAMES['#k'], '#e': NAMES['#e'] },
        ExpressionAttributeValues: { ':now': { N: String(now) } },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      });
    });
    if (answer.passed) return 'claimed';
    const held = answer.item ?? (await this.#read(key));
    return held?.state?.S === COMPLETED ? 'completed' : 'in_progress';
  }

  async complete(key: string, token: string, ttlMs: number): Promise<CompleteResult> {
    const now = Date.now();
    const item = this.#item(key, COMPLETED, now + wholeMilliseconds(ttlMs));
    const answer = await this.#send('complete', (sdk) => {
      return new sdk.PutItemCommand({
        TableName: this.#table,
        Item: item,
        ...holderCondition(now, token),
      });
    });
    return answer.passed ? 'completed' : 'lost';
  }

  async renew(key: string, token: string, leaseMs: number): Promise<RenewResult> {
    const now = Date.now();
    const item = this.#item(key, IN_PROGRESS, now + wholeMilliseconds(leaseMs), token);
    const answer = await this.#send('renew', (sdk) => {
      return new sdk.PutItemCommand({
        TableName: this.#table,
        Item: item,
        ...holderCondition(now, token),
      });
    });
    return answer.passed ? 'renewed' : 'lost';
  }

  async release(key: string, token: string): Promise<void> {
    await this.#send('release', (sdk) => {
      return new sdk.DeleteItemCommand({
        TableName: this.#table,
        Key: { pk: { S: this.keyFor(key) } },
        ConditionExpression: RELEASE_CONDITION,
        ExpressionAttributeNames: { '#s': NAMES['#s'], '#t': NAMES['#t'] },
        ExpressionAttributeValues: { ':held': { S: IN_PROGRESS }, ':token': { S: token } },
      });
    });
  }

  /**
   * Part of the `ordering` option's contract (see `IdempotencyStore`): take the resource's lease for
   * `token`, or answer how long its holder's lease still runs. One conditional `UpdateItem` of the
   * resource's item (`ReturnValues: ALL_NEW` answers the watermark in the same call), fenced as
   * {@link DynamoDBStore.claim} is. A second call only when the condition fails: the lease is live
   * (real DynamoDB tells it in the same answer; dynalite costs a consistent read), or the item's TTL
   * fell short of the new lease and is raised by a second version of the update.
   *
   * @example
   * ```ts
   * const claim = await store.claimResource('user:usr_1', crypto.randomUUID(), 45_000);
   * ```
   */
  async claimResource(resource: string, token: string, leaseMs: number): Promise<ResourceClaimResult> {
    const lease = wholeMilliseconds(leaseMs);
    let raisesTtl = false;
    for (let round = 0; round < SHAPE_ROUNDS; round++) {
      const now = Date.now();
      const answer = await this.#takeLease(
        'claim',
        resource,
        token,
        now,
        now + lease,
        LEASE_FREE,
        raisesTtl,
        true,
      );
      if (answer.passed) {
        this.#remember(`${token}\u0000${resource}`, answer.item);
        return { outcome: 'claimed', watermark: watermarkOf(answer.item, now) };
      }
      const item = answer.item ?? (await this.#readResource('claim', resource));
      const leaseEnds = Number(item?.leaseEndsAtMs?.N ?? Number.NaN);
      if (leaseEnds > now) return { outcome: 'busy', retryAfterMs: Math.max(1, Math.ceil(leaseEnds - now)) };
      raisesTtl = ttlFallsShort(item, now + lease);
    }
    return { outcome: 'busy', retryAfterMs: 1 };
  }

  /**
   * Part of the `ordering` option's contract: extend the resource's lease on the terms of
   * {@link DynamoDBStore.renew}. One conditional `UpdateItem` (two when the TTL must be raised).
   *
   * @example
   * ```ts
   * await store.renewResource('user:usr_1', token, 45_000); // 'renewed' or 'lost'
   * ```
   */
  async renewResource(resource: string, token: string, leaseMs: number): Promise<RenewResult> {
    const lease = wholeMilliseconds(leaseMs);
    let raisesTtl = false;
    for (let round = 0; round < SHAPE_ROUNDS; round++) {
      const now = Date.now();
      const free = `(${LEASE_FREE} OR #t = :token)`;
      const answer = await this.#takeLease(
        'renew',
        resource,
        token,
        now,
        now + lease,
        free,
        raisesTtl,
        false,
      );
      if (answer.passed) return 'renewed';
      const item = answer.item ?? (await this.#readResource('renew', resource));
      const leaseEnds = Number(item?.leaseEndsAtMs?.N ?? Number.NaN);
      if (leaseEnds > now && item?.token?.S !== token) return 'lost';
      raisesTtl = ttlFallsShort(item, now + lease);
    }
    return 'lost';
  }

  /**
   * Part of the `ordering` option's contract: end the resource's lease, only while `token` holds it;
   * the watermark stays. One conditional `UpdateItem`.
   *
   * @example
   * ```ts
   * await store.releaseResource('user:usr_1', token);
   * ```
   */
  async releaseResource(resource: string, token: string): Promise<void> {
    this.#claimedItems.delete(`${token}\u0000${resource}`);
    await this.#send('release', (sdk) => {
      return new sdk.UpdateItemCommand({
        TableName: this.#table,
        Key: { pk: { S: this.#resourceKey(resource) } },
        ConditionExpression: '#t = :token',
        UpdateExpression: 'REMOVE #t, #le',
        ExpressionAttributeNames: { '#t': RESOURCE_NAMES['#t'], '#le': RESOURCE_NAMES['#le'] },
        ExpressionAttributeValues: { ':token': { S: token } },
      });
    });
  }

  /**
   * Part of the `ordering` option's contract: complete the event on {@link DynamoDBStore.complete}'s
   * terms and, atomically with it, advance the resource's watermark, extend its memory and end the
   * lease `token` holds: one `TransactWriteItems` of two items, the event's `Put` under the
   * completion's condition and the resource's `Update` under conditions on its own state, so that
   * both are written or neither.
   *
   * Update expressions have no `max` nor `if`: the resource's update is written for the state it
   * expects (the holder completing an event newer than the watermark), and its conditions pin that
   * state, read from the item this store's claimResource got for `token` (the holder's lease keeps
   * it as it was, but for completions by tokens that do not hold the lease). When the transaction is
   * cancelled on the event's condition the answer is 'lost'; when it is cancelled on the resource's
   * only, the item (returned with the cancellation by DynamoDB, read consistently otherwise) says
   * which version of the update is right, and that one is sent. So a guarded completion, stale or
   * not, costs one transaction; another only when the resource changed since the claim.
   *
   * @example
   * ```ts
   * await store.completeOrdered(key, token, 86_400_000, 'user:usr_1', 3_400_000_001, 86_400_000);
   * ```
   */
  async completeOrdered(
    key: string,
    token: string,
    ttlMs: number,
    resource: string,
    position: number,
    watermarkTtlMs: number,
  ): Promise<CompleteResult> {
    const ttl = wholeMilliseconds(ttlMs);
    const memory = wholeMilliseconds(watermarkTtlMs);
    const claimed = `${token}\u0000${resource}`;
    const hint = this.#claimedItems.get(claimed);
    this.#claimedItems.delete(claimed);
    const first = Date.now();
    let shape =
      hint === undefined
        ? LIKELY_SHAPE
        : resourceShapeOf(hint, token, first, position, memoryEnds(first, memory));
    for (let round = 0; round < SHAPE_ROUNDS; round++) {
      const now = Date.now();
      const ends = memoryEnds(now, memory);
      const { ConditionExpression, UpdateExpression } = resourceUpdate(shape);
      const expressions = `${ConditionExpression} ${UpdateExpression}`;
      const values: Item = {
        ':token': { S: token },
        ':now': { N: String(now) },
        ':position': { N: String(position) },
        ':ends': { N: String(ends) },
        ':endsSeconds': { N: String(Math.ceil(ends / 1000)) },
      };
      const answer = await this.#send('complete', (sdk) => {
        return new sdk.TransactWriteItemsCommand({
          TransactItems: [
            {
              Put: {
                TableName: this.#table,
                Item: this.#item(key, COMPLETED, now + ttl),
                ...holderCondition(now, token),
              },
            },
            {
              Update: {
                TableName: this.#table,
                Key: { pk: { S: this.#resourceKey(resource) } },
                ConditionExpression,
                UpdateExpression,
                ExpressionAttributeNames: usedIn(expressions, RESOURCE_NAMES),
                ExpressionAttributeValues: usedIn(expressions, values),
                ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
              },
            },
          ],
        });
      });
      if (answer.passed) return 'completed';
      const [event, other] = answer.reasons ?? [];
      if (event?.Code === 'ConditionalCheckFailed') return 'lost';
      if (other?.Code === 'ConditionalCheckFailed') {
        const item = other.Item ?? (await this.#readResource('complete', resource));
        const later = Date.now();
        shape = resourceShapeOf(item, token, later, position, memoryEnds(later, memory));
      }
      // Otherwise a conflict with a concurrent write to one of the items (TransactionConflict): the
      // transaction changed nothing, and is sent again.
    }
    throw new StoreUnavailableError(
      `DynamoDBStore could not complete the event: the resource ${JSON.stringify(resource)} changed under ${SHAPE_ROUNDS} transactions in a row.`,
    );
  }

  /**
   * The partition key value that holds the store key `key`, as the store writes it (for inspection and
   * tests). Only `%` and unpaired UTF-16 surrogates are escaped (DynamoDB stores UTF-8, where unpaired
   * surrogates cannot be written), so distinct keys stay distinct.
   *
   * @example
   * ```ts
   * await client.send(new GetItemCommand({ TableName: 'webhook-events', Key: { pk: { S: store.keyFor(key) } } }));
   * ```
   */
  keyFor(key: string): string {
    return this.#prefix + encodeKey(key);
  }

  /**
   * Create the table if it does not exist (on-demand capacity, partition key `pk` of type String), wait
   * until it is ACTIVE, and turn Time to Live on for `expiresAt` unless it already is. For development
   * and tests: in production, declare the table with your infrastructure code (see the DynamoDB page of the docs, https://service-webhooks.github.io/service-webhooks/stores/dynamodb.html).
   * An endpoint without UpdateTimeToLive (dynalite) rejects with a `ConfigurationError` that says
   * to pass `{ timeToLive: false }`; the table is created by then.
   *
   * @example
   * ```ts
   * const store = new DynamoDBStore({ client, tableName: 'webhook-events' });
   * await store.createTable();
   * ```
   */
  async createTable(options: CreateDynamoDBTableOptions = {}): Promise<void> {
    const sdk = await loadSdk();
    const send = (command: Command) => this.#client.send(command as never) as Promise<Sent>;
    try {
      await send(
        new sdk.CreateTableCommand({
          TableName: this.#table,
          AttributeDefinitions: [
            { AttributeName: DYNAMODB_STORE_ATTRIBUTES.partitionKey, AttributeType: 'S' },
          ],
          KeySchema: [{ AttributeName: DYNAMODB_STORE_ATTRIBUTES.partitionKey, KeyType: 'HASH' }],
          BillingMode: 'PAY_PER_REQUEST',
        }),
      );
    } catch (error) {
      if (errorName(error) !== 'ResourceInUseException') throw error;
    }
    const waitMs = options.waitMs ?? 120_000;
    const deadline = Date.now() + waitMs;
    for (;;) {
      const { Table } = await send(new sdk.DescribeTableCommand({ TableName: this.#table }));
      if (Table?.TableStatus === 'ACTIVE') break;
      if (Date.now() > deadline) {
        throw new Error(`DynamoDB table ${this.#table} is still ${Table?.TableStatus} after ${waitMs} ms.`);
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    if (options.timeToLive === false) return;
    const { TimeToLiveDescription: ttl } = await send(
      new sdk.DescribeTimeToLiveCommand({ TableName: this.#table }),
    );
    const status = ttl?.TimeToLiveStatus;
    if (status === 'ENABLED' || status === 'ENABLING') {
      if (ttl?.AttributeName === DYNAMODB_STORE_ATTRIBUTES.timeToLive) return;
      throw new Error(
        `DynamoDB table ${this.#table} has Time to Live on "${ttl?.AttributeName}"; the store needs it on "${DYNAMODB_STORE_ATTRIBUTES.timeToLive}" (the table's items are then never deleted).`,
      );
    }
    try {
      await send(
        new sdk.UpdateTimeToLiveCommand({
          TableName: this.#table,
          TimeToLiveSpecification: { Enabled: true, AttributeName: DYNAMODB_STORE_ATTRIBUTES.timeToLive },
        }),
      );
    } catch (cause) {
      if (errorName(cause) !== 'UnknownOperationException') throw cause;
      // A local emulator without UpdateTimeToLive (dynalite): the table exists and works; say how to skip TTL.
      const error = new ConfigurationError(
        `DynamoDB table ${this.#table} was created, but this endpoint does not implement UpdateTimeToLive (a local emulator such as dynalite?): call createTable({ timeToLive: false }) there. Against AWS, keep Time to Live on.`,
      );
      error.cause = cause;
      throw error;
    }
  }

  #item(key: string, state: string, expiresAtMs: number, token?: string): Item {
    const item: Item = {
      pk: { S: this.keyFor(key) },
      state: { S: state },
      expiresAtMs: { N: String(expiresAtMs) },
      // Rounded up: DynamoDB's TTL must never delete an item before its lease or memory ended.
      expiresAt: { N: String(Math.ceil(expiresAtMs / 1000)) },
    };
    if (token !== undefined) item.token = { S: token };
    return item;
  }

  #remember(claimed: string, item: Item | undefined): void {
    if (item === undefined) return;
    if (this.#claimedItems.size >= MAX_CLAIMED_ITEMS) {
      const oldest = this.#claimedItems.keys().next().value;
      if (oldest !== undefined) this.#claimedItems.delete(oldest);
    }
    this.#claimedItems.set(claimed, item);
  }

  /** The partition key of a resource's item (see {@link RESOURCE_MARKER}). */
  #resourceKey(resource: string): string {
    return this.#prefix + RESOURCE_MARKER + encodeKey(resource);
  }

  /**
   * Give the lease to `token` until `leaseEnds` where `condition` holds, with the TTL kept (when it
   * covers the lease already) or raised to the lease's end: see {@link TTL_COVERS}.
   */
  #takeLease(
    operation: string,
    resource: string,
    token: string,
    now: number,
    leaseEnds: number,
    condition: string,
    raisesTtl: boolean,
    answersItem: boolean,
  ) {
    const ttl = raisesTtl ? TTL_SHORT : TTL_COVERS;
    const update = `SET #t = :token, #le = :leaseEnds, #x = ${raisesTtl ? ':ends' : 'if_not_exists(#x, :ends)'}`;
    const expressions = `${condition} ${ttl} ${update}`;
    return this.#send(operation, (sdk) => {
      return new sdk.UpdateItemCommand({
        TableName: this.#table,
        Key: { pk: { S: this.#resourceKey(resource) } },
        ConditionExpression: `${condition} AND ${ttl}`,
        UpdateExpression: update,
        ExpressionAttributeNames: usedIn(expressions, RESOURCE_NAMES),
        ExpressionAttributeValues: usedIn(expressions, {
          ':token': { S: token },
          ':now': { N: String(now) },
          ':leaseEnds': { N: String(leaseEnds) },
          ':ends': { N: String(Math.ceil(leaseEnds / 1000)) },
        }),
        ...(answersItem ? { ReturnValues: 'ALL_NEW' as const } : {}),
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      });
    });
  }

  /** A resource's item, read consistently, where a failed condition did not return it. */
  async #readResource(operation: string, resource: string): Promise<Item | undefined> {
    const answer = await this.#send(operation, (sdk) => {
      return new sdk.GetItemCommand({
        TableName: this.#table,
        Key: { pk: { S: this.#resourceKey(resource) } },
        ConsistentRead: true,
      });
    });
    return answer.item;
  }

  /** Where a claim's condition failed and DynamoDB did not return the item (see the class TSDoc). */
  async #read(key: string): Promise<Item | undefined> {
    const answer = await this.#send('claim', (sdk) => {
      return new sdk.GetItemCommand({
        TableName: this.#table,
        Key: { pk: { S: this.keyFor(key) } },
        ConsistentRead: true,
        ProjectionExpression: '#s',
        ExpressionAttributeNames: { '#s': NAMES['#s'] },
      });
    });
    return answer.item;
  }

  /** Send one command: `passed` is false when its condition failed, every other failure throws. */
  async #send(
    operation: string,
    build: (sdk: Sdk) => Command,
  ): Promise<{ passed: boolean; item: Item | undefined; reasons?: CancellationReason[] }> {
    let sdk: Sdk;
    try {
      sdk = loadedSdk ?? (await loadSdk());
    } catch (cause) {
      throw new StoreUnavailableError(
        `DynamoDBStore could not load @aws-sdk/client-dynamodb (install it next to service-webhooks): ${reason(cause)}`,
        { cause },
      );
    }
    try {
      const sent = (await this.#client.send(build(sdk) as never)) as Sent;
      return { passed: true, item: sent.Item ?? sent.Attributes };
    } catch (cause) {
      if (errorName(cause) === 'ConditionalCheckFailedException') {
        return { passed: false, item: (cause as { Item?: Item }).Item };
      }
      if (errorName(cause) === 'TransactionCanceledException') {
        const reasons = (cause as { CancellationReasons?: CancellationReason[] }).CancellationReasons;
        return { passed: false, item: undefined, reasons: reasons ?? [] };
      }
      const hint =
        errorName(cause) === 'ResourceNotFoundException'
          ? ` (does table ${this.#table} exist in this region? See DynamoDBStore.createTable)`
          : '';
      throw new StoreUnavailableError(
        `DynamoDBStore could not ${operation} the event: ${reason(cause)}${hint}`,
        { cause },
      );
    }
  }
}

/** The condition of complete and renew, with exactly the placeholders it uses. */
function holderCondition(now: number, token: string) {
  return {
    ConditionExpression: HOLDER_CONDITION,
    ExpressionAttributeNames: { ...NAMES },
    ExpressionAttributeValues: {
      ':now': { N: String(now) },
      ':held': { S: IN_PROGRESS },
      ':token': { S: token },
    },
  };
}

/** The item's TTL is set and ends before `endsMs` (an absent TTL is set by the update as it is). */
function ttlFallsShort(item: Item | undefined, endsMs: number): boolean {
  const ttl = item?.expiresAt?.N;
  return ttl !== undefined && Number(ttl) < Math.ceil(endsMs / 1000);
}

/** The watermark an item remembers at `now`, if any. */
function watermarkOf(item: Item | undefined, now: number): number | undefined {
  const ends = item?.watermarkEndsAtMs?.N;
  const watermark = item?.watermark?.N;
  if (ends === undefined || watermark === undefined || Number(ends) <= now) return undefined;
  return Number(watermark);
}

function errorName(error: unknown): unknown {
  return (error as { name?: unknown } | null)?.name;
}

function reason(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
