/**
 * `service-webhooks/redis`: an idempotency store shared by every process that receives deliveries,
 * kept in Redis (standalone, Sentinel or Cluster) through an ioredis client the application owns.
 *
 * @example
 * ```ts
 * import Redis from 'ioredis';
 * import { createWebhooks } from 'service-webhooks';
 * import { RedisStore } from 'service-webhooks/redis';
 *
 * const redis = new Redis(process.env.REDIS_URL!, { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 1_000 });
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: new RedisStore({ client: redis }) });
 * ```
 * @packageDocumentation
 */
import type { Cluster, Redis } from 'ioredis';
import {
  type BackgroundErrorListener,
  type ClaimResult,
  type CompleteResult,
  ConfigurationError,
  type IdempotencyStore,
  type RenewResult,
  type ResourceClaimResult,
  StoreUnavailableError,
} from 'service-webhooks/core';
import { BackgroundErrors } from './background-errors.js';
import { EvictionGuard, type EvictionPolicyMode } from './redis-eviction.js';
import { keyEncoder, wholeMilliseconds } from './store-encoding.js';

/**
 * `{` and `}` escaped so the whole key is the hash tag, with `%` and unpaired surrogates, so distinct
 * keys stay distinct keys.
 */
const encodeKey = keyEncoder('{}');

export type { EvictionPolicyMode } from './redis-eviction.js';

/**
 * Options of {@link RedisStore}.
 *
 * @example
 * ```ts
 * new RedisStore({ client: new Redis(process.env.REDIS_URL!, { enableOfflineQueue: false }), prefix: 'billing:webhooks:' });
 * ```
 */
export interface RedisStoreOptions {
  /**
   * An ioredis `Redis` or `Cluster` the application created and owns: the store never closes it and
   * adds no lasting listener to it. Create it with options that fail fast while Redis is unreachable,
   * so a delivery during an outage is answered 503 at once and nothing piles up:
   * `{ enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 1_000 }` (for a `Cluster`,
   * `enableOfflineQueue: false` at the top level and the other two in `redisOptions`).
   *
   * The client's first connection is waited for: a call made while it is still being made (a
   * serverless cold start creates the client and receives the first delivery in the same moment)
   * waits up to `readyTimeoutMs` for it rather than failing because the offline queue is off. A
   * `lazyConnect` client is connected by the first call, as ioredis does on a first command. Once the
   * client has been ready, or its first connection failed, calls never wait: while it reconnects they
   * fail at once, as the fail-fast options intend.
   */
  client: Redis | Cluster;
  /**
   * How long a call waits for the client's first connection to be ready (see `client`). Keep it below
   * the receiver's `storeTimeoutMs` (2 s by default) with room for the command itself.
   * @default 1_000
   */
  readyTimeoutMs?: number;
  /**
   * Put before every key, to share one Redis with other data. It must not contain `{` or `}`: the
   * store key (the receiver's dedup scope and the event id) is the Redis key's hash tag, which spreads
   * events over a Cluster's slots.
   * @default 'service-webhooks:'
   */
  prefix?: string;
  /**
   * What to do when the server (any master of a Cluster) may evict keys: a `maxmemory` with a
   * `maxmemory-policy` other than `noeviction`. Every key the store writes has a TTL, so `volatile-*`
   * policies evict them too, and an evicted record runs a handled event again. Checked on the first
   * call and at most once a minute after (INFO memory, or CONFIG GET where INFO is refused).
   * `'refuse'`: every call fails as an outage would (503 `store_unavailable`, so the sender retries),
   * and a `ConfigurationError` naming the policy is reported to `onError`, until the policy is
   * `noeviction`. `'report'`: the error is reported once and the store goes on.
   * @default 'refuse'
   */
  evictionPolicy?: EvictionPolicyMode;
}

/**
 * Client statuses in which a connection is on its way: `connecting` and `connect` (socket open, the
 * handshake and ready check under way) for `Redis` and `Cluster` alike, and `wait`, a `lazyConnect`
 * client nothing has used yet. Any other status but `ready` (`reconnecting`, `close`, `end`,
 * `disconnecting`, `monitoring`) is a client that was connected or tried to be.
 */
const CONNECTING: ReadonlySet<string> = new Set(['wait', 'connecting', 'connect']);

/** The value of a handled event's key. Tokens are stored as `t:` + token, so no token can equal it. */
const COMPLETED = 'c';
const TOKEN_PREFIX = 't:';

/** Claim answers from the script, by index. */
const CLAIM_RESULTS: readonly ClaimResult[] = ['claimed', 'in_progress', 'completed'];

/**
 * One key per script, declared in KEYS, so each runs on the one node that owns the event's slot.
 * SET NX PX takes the event atomically; on contention the same script reads what holds it, so the
 * caller learns "in progress" or "completed" in one round trip.
 */
const CLAIM_LUA = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end
if redis.call('GET', KEYS[1]) == '${COMPLETED}' then return 2 end
return 1`;

/**
 * The holder marks the key handled, and so may anyone when the key is absent: Redis drops a key whose
 * lease ended, and an absent key means no other attempt took the event over (nor completed it) since.
 * Another token's live lease, or the completed marker, answers 0 and is left as it is.
 */
const COMPLETE_LUA = `
local value = redis.call('GET', KEYS[1])
if value ~= ARGV[1] and value ~= false then return 0 end
redis.call('SET', KEYS[1], '${COMPLETED}', 'PX', ARGV[2])
return 1`;

/** Same terms as COMPLETE_LUA; the key then holds the token again, for a lease counted from now. */
const RENEW_LUA = `
local value = redis.call('GET', KEYS[1])
if value ~= ARGV[1] and value ~= false then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`;

const RELEASE_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0`;

/**
 * The `ordering` option's scripts. A resource has two Redis keys beside its events' keys, in their
 * hash slot (see `keyFor`): its lease (the holder's token, `PX` the lease) and its watermark (the
 * highest position completed, `PX` its TTL), so each script touches keys of one slot, as Cluster
 * requires. The lease holds `t:` + token, as an event's does.
 *
 * claimResource: a live lease of another token answers busy and its PTTL; else the lease is (re)set
 * and the watermark read, in the same step.
 */
const CLAIM_RESOURCE_LUA = `
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then
  local left = redis.call('PTTL', KEYS[1])
  if left < 1 then left = 1 end
  return {0, left}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local watermark = redis.call('GET', KEYS[2])
if watermark then return {1, watermark} end
return {1}`;

/** Same terms as RENEW_LUA, without a completed state: a resource's lease is only ever a token's. */
const RENEW_RESOURCE_LUA = `
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`;

/**
 * COMPLETE_LUA's rules for the event's key (KEYS[1]); when they complete it, in the same script, the
 * watermark (KEYS[3]) becomes the higher of the two positions with the longer of the two TTLs, and the
 * resource's lease (KEYS[2]) ends if this token holds it. Positions are integers below 2^53, which
 * Lua's numbers hold exactly.
 */
const COMPLETE_ORDERED_LUA = `
local value = redis.call('GET', KEYS[1])
if value ~= ARGV[1] and value ~= false then return 0 end
redis.call('SET', KEYS[1], '${COMPLETED}', 'PX', ARGV[2])
local ttl = tonumber(ARGV[4])
local left = redis.call('PTTL', KEYS[3])
if left > ttl then ttl = left end
local old = redis.call('GET', KEYS[3])
if old == false or tonumber(old) < tonumber(ARGV[3]) then
  redis.call('SET', KEYS[3], ARGV[3], 'PX', ttl)
else
  redis.call('PEXPIRE', KEYS[3], ttl)
end
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return 1`;

/**
 * Names of the commands defined on the client. Namespaced, because `defineCommand` adds methods to a
 * client the application owns; defining them again (a second store on one client) is harmless.
 */
const CLAIM = 'serviceWebhooksClaim';
const COMPLETE = 'serviceWebhooksComplete';
const RELEASE = 'serviceWebhooksRelease';
const RENEW = 'serviceWebhooksRenew';
const CLAIM_RESOURCE = 'serviceWebhooksClaimResource';
const RENEW_RESOURCE = 'serviceWebhooksRenewResource';
const RELEASE_RESOURCE = 'serviceWebhooksReleaseResource';
const COMPLETE_ORDERED = 'serviceWebhooksCompleteOrdered';

type ScriptCall = (...keysThenArgs: string[]) => Promise<unknown>;
type ScriptedClient = Record<
  | typeof CLAIM
  | typeof COMPLETE
  | typeof RELEASE
  | typeof RENEW
  | typeof CLAIM_RESOURCE
  | typeof RENEW_RESOURCE
  | typeof RELEASE_RESOURCE
  | typeof COMPLETE_ORDERED,
  ScriptCall
>;

/** Between a guarded event's resource and the rest of its store key (the core's `RESOURCE_SEPARATOR`). */
const RESOURCE_SEPARATOR = '\u001f';
/** What follows a resource's hash tag in its two keys; no event's Redis key has either there. */
const LEASE_SUFFIX = ':lease';
const WATERMARK_SUFFIX = ':watermark';

/**
 * The idempotency store for several processes or machines: claims, completions, renewals and releases
 * are one Redis round trip each, atomic (`SET NX PX` and token-checked Lua scripts; ioredis sends each
 * script's body once per connection and EVALSHA after that, and resends it if Redis lost its cache),
 * and Redis keeps every TTL, so nothing needs cleaning. Keys look like `service-webhooks:{<key>}`: the
 * whole store key (dedup scope and event id) is the hash tag, so the store works on Redis Cluster as it
 * does on one server.
 *
 * When Redis is unreachable each call fails (or misses the core's `storeTimeoutMs`, 2 s by default) and
 * the sender is answered 503 `store_unavailable` without running handlers; it retries later. Create the
 * client so that it fails fast instead of queueing commands while it reconnects (see
 * {@link RedisStoreOptions.client}); once Redis is back, deliveries are handled again without a restart.
 * The one exception is the client's first connection, which calls wait for (up to `readyTimeoutMs`), so
 * that the first delivery after a serverless cold start is handled rather than refused.
 *
 * The store adds no `error` listener to the client: ioredis 5 prints an `error` event that has no
 * listener to stderr and never throws it, so an outage cannot crash the application either way. Add
 * `client.on('error', ...)` to send those connection errors to your logger; failed store calls also
 * reach `webhooks.onError` as `StoreUnavailableError`.
 *
 * @example
 * ```ts
 * import { Cluster, Redis } from 'ioredis';
 * import { RedisStore } from 'service-webhooks/redis';
 *
 * const store = new RedisStore({
 *   client: new Redis(process.env.REDIS_URL!, { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 1_000 }),
 * });
 * const clusterStore = new RedisStore({
 *   client: new Cluster([{ host: 'redis-0', port: 6379 }], {
 *     enableOfflineQueue: false,
 *     redisOptions: { maxRetriesPerRequest: 1, commandTimeout: 1_000 },
 *   }),
 * });
 * ```
 */
export class RedisStore implements IdempotencyStore {
  readonly #client: ScriptedClient;
  readonly #redis: Redis | Cluster;
  readonly #prefix: string;
  readonly #readyTimeoutMs: number;
  /**
   * Whether the client's first connection is behind it (it was ready, failed, or was given up on):
   * from then on no call waits, so an outage is answered at once rather than after a wait.
   */
  #pastFirstConnection = false;
  /** The wait for the first connection, shared by the calls that arrive during it. */
  #firstConnection: Promise<void> | undefined;
  readonly #backgroundErrors = new BackgroundErrors();
  readonly #eviction: EvictionGuard;

  constructor(options: RedisStoreOptions) {
    const client: unknown = options?.client;
    if (typeof (client as Partial<Redis> | undefined)?.defineCommand !== 'function') {
      throw new ConfigurationError(
        'RedisStore needs an ioredis client: new RedisStore({ client: new Redis(process.env.REDIS_URL) }) (or a Cluster).',
      );
    }
    const prefix = options.prefix ?? 'service-webhooks:';
    if (typeof prefix !== 'string' || /[{}]/.test(prefix)) {
      throw new ConfigurationError(
        `RedisStore \`prefix\` must be a string without \`{\` or \`}\` (the store key is the Redis key's hash tag); got ${JSON.stringify(prefix)}.`,
      );
    }
    const readyTimeoutMs = options.readyTimeoutMs ?? 1_000;
    if (typeof readyTimeoutMs !== 'number' || !Number.isFinite(readyTimeoutMs) || readyTimeoutMs <= 0) {
      throw new ConfigurationError(
        `RedisStore \`readyTimeoutMs\` must be a positive number of milliseconds; got ${String(readyTimeoutMs)}.`,
      );
    }
    const redis = client as Redis | Cluster;
    redis.defineCommand(CLAIM, { numberOfKeys: 1, lua: CLAIM_LUA });
    redis.defineCommand(COMPLETE, { numberOfKeys: 1, lua: COMPLETE_LUA });
    redis.defineCommand(RELEASE, { numberOfKeys: 1, lua: RELEASE_LUA });
    redis.defineCommand(RENEW, { numberOfKeys: 1, lua: RENEW_LUA });
    redis.defineCommand(CLAIM_RESOURCE, { numberOfKeys: 2, lua: CLAIM_RESOURCE_LUA });
    redis.defineCommand(RENEW_RESOURCE, { numberOfKeys: 1, lua: RENEW_RESOURCE_LUA });
    redis.defineCommand(RELEASE_RESOURCE, { numberOfKeys: 1, lua: RELEASE_LUA });
    redis.defineCommand(COMPLETE_ORDERED, { numberOfKeys: 3, lua: COMPLETE_ORDERED_LUA });
    this.#client = redis as unknown as ScriptedClient;
    this.#redis = redis;
    this.#prefix = prefix;
    this.#readyTimeoutMs = readyTimeoutMs;
    this.#pastFirstConnection = !CONNECTING.has(redis.status);
    this.#eviction = new EvictionGuard(redis, 'RedisStore', options.evictionPolicy, this.#backgroundErrors);
  }

  /** Called by each receiver that uses this store: an unsafe eviction policy is reported through it. */
  onBackgroundError(listener: BackgroundErrorListener): void {
    this.#backgroundErrors.listen(listener);
  }

  async claim(key: string, token: string, leaseMs: number): Promise<ClaimResult> {
    const answer = await this.#call(
      'claim',
      CLAIM,
      key,
      TOKEN_PREFIX + token,
      String(wholeMilliseconds(leaseMs)),
    );
    const result = typeof answer === 'number' ? CLAIM_RESULTS[answer] : undefined;
    if (result === undefined) throw unexpected('claim', answer);
    return result;
  }

  async complete(key: string, token: string, ttlMs: number): Promise<CompleteResult> {
    const answer = await this.#call(
      'complete',
      COMPLETE,
      key,
      TOKEN_PREFIX + token,
      String(wholeMilliseconds(ttlMs)),
    );
    if (answer !== 0 && answer !== 1) throw unexpected('complete', answer);
    return answer === 1 ? 'completed' : 'lost';
  }

  async release(key: string, token: string): Promise<void> {
    await this.#call('release', RELEASE, key, TOKEN_PREFIX + token);
  }

  async renew(key: string, token: string, leaseMs: number): Promise<RenewResult> {
    const answer = await this.#call(
      'renew',
      RENEW,
      key,
      TOKEN_PREFIX + token,
      String(wholeMilliseconds(leaseMs)),
    );
    if (answer !== 0 && answer !== 1) throw unexpected('renew', answer);
    return answer === 1 ? 'renewed' : 'lost';
  }

  // The `ordering` option's operations: one script, so one round trip, each.

  async claimResource(resource: string, token: string, leaseMs: number): Promise<ResourceClaimResult> {
    const [lease, watermark] = this.resourceKeysFor(resource);
    const answer = await this.#callKeys(
      'claim the resource of',
      CLAIM_RESOURCE,
      [lease, watermark],
      TOKEN_PREFIX + token,
      String(wholeMilliseconds(leaseMs)),
    );
    if (Array.isArray(answer) && answer[0] === 0 && typeof answer[1] === 'number') {
      return { outcome: 'busy', retryAfterMs: answer[1] };
    }
    if (Array.isArray(answer) && answer[0] === 1) {
      if (answer.length === 1) return { outcome: 'claimed', watermark: undefined };
      const position = Number(answer[1]);
      if (Number.isSafeInteger(position)) return { outcome: 'claimed', watermark: position };
    }
    throw unexpected('claimResource', answer);
  }

  async renewResource(resource: string, token: string, leaseMs: number): Promise<RenewResult> {
    const answer = await this.#callKeys(
      'renew the resource of',
      RENEW_RESOURCE,
      [this.resourceKeysFor(resource)[0]],
      TOKEN_PREFIX + token,
      String(wholeMilliseconds(leaseMs)),
    );
    if (answer !== 0 && answer !== 1) throw unexpected('renewResource', answer);
    return answer === 1 ? 'renewed' : 'lost';
  }

  async releaseResource(resource: string, token: string): Promise<void> {
    await this.#callKeys(
      'release the resource of',
      RELEASE_RESOURCE,
      [this.resourceKeysFor(resource)[0]],
      TOKEN_PREFIX + token,
    );
  }

  async completeOrdered(
    key: string,
    token: string,
    ttlMs: number,
    resource: string,
    position: number,
    watermarkTtlMs: number,
  ): Promise<CompleteResult> {
    if (!Number.isSafeInteger(position) || position < 0) {
      throw new RangeError(
        `completeOrdered needs a position that is a non-negative safe integer; got ${position}.`,
      );
    }
    const [lease, watermark] = this.resourceKeysFor(resource);
    const answer = await this.#callKeys(
      'complete',
      COMPLETE_ORDERED,
      [this.keyFor(key), lease, watermark],
      TOKEN_PREFIX + token,
      String(wholeMilliseconds(ttlMs)),
      String(position),
      String(wholeMilliseconds(watermarkTtlMs)),
    );
    if (answer !== 0 && answer !== 1) throw unexpected('completeOrdered', answer);
    return answer === 1 ? 'completed' : 'lost';
  }

  /**
   * The Redis key that holds the store key `key`, as the store writes it (for inspection and tests).
   * The hash tag is the whole key, or for an event guarded by the `ordering` option (a key holding
   * U+001F) its resource, the part before that character, so that the event and its resource share a
   * Cluster slot: `prefix{resource}` U+001F `rest`.
   *
   * @example
   * ```ts
   * await redis.pttl(store.keyFor(key)); // the lease or completion left, in ms
   * ```
   */
  keyFor(key: string): string {
    const split = key.indexOf(RESOURCE_SEPARATOR);
    if (split === -1) return `${this.#prefix}{${encodeKey(key)}}`;
    return `${this.#prefix}{${encodeKey(key.slice(0, split))}}${RESOURCE_SEPARATOR}${encodeKey(key.slice(split + 1))}`;
  }

  /**
   * The two Redis keys of a resource: its lease and its watermark, `prefix{resource}:lease` and
   * `prefix{resource}:watermark`, in the slot of its guarded events' keys.
   *
   * @example
   * ```ts
   * const [, watermark] = store.resourceKeysFor(resource);
   * await redis.get(watermark); // the highest position completed
   * ```
   */
  resourceKeysFor(resource: string): readonly [lease: string, watermark: string] {
    const tagged = `${this.#prefix}{${encodeKey(resource)}}`;
    return [tagged + LEASE_SUFFIX, tagged + WATERMARK_SUFFIX];
  }

  #call(operation: string, command: keyof ScriptedClient, key: string, ...args: string[]) {
    return this.#callKeys(operation, command, [this.keyFor(key)], ...args);
  }

  async #callKeys(
    operation: string,
    command: keyof ScriptedClient,
    keys: readonly string[],
    ...args: string[]
  ) {
    try {
      if (!this.#pastFirstConnection) await this.#untilFirstConnection();
      const evictionChecked = this.#eviction.check();
      if (evictionChecked) await evictionChecked;
      return await this.#client[command](...keys, ...args);
    } catch (cause) {
      const reason = cause instanceof Error ? cause.message : String(cause);
      throw new StoreUnavailableError(`RedisStore could not ${operation} the event: ${reason}`, { cause });
    }
  }

  /**
   * Resolves when a call may go ahead: at once unless the client's first connection is under way,
   * else when it is ready. Rejects when that connection fails or is not ready within readyTimeoutMs.
   * "First" is told from "again" by what this store has seen of the client's status: once it has
   * been `ready`, `reconnecting` (after a failure) or anything else past connecting, later connections
   * are reconnections. (A store whose first call comes during a reconnection attempt, having never
   * seen the client otherwise, waits for that attempt once, at most readyTimeoutMs.)
   */
  #untilFirstConnection(): Promise<void> | undefined {
    const redis = this.#redis;
    if (!CONNECTING.has(redis.status)) {
      this.#pastFirstConnection = true;
      return undefined;
    }
    this.#firstConnection ??= new Promise<void>((resolve, reject) => {
      const done = (error?: Error) => {
        clearTimeout(timer);
        redis.off('ready', onReady);
        redis.off('close', onClose);
        redis.off('end', onClose);
        this.#pastFirstConnection = true;
        this.#firstConnection = undefined;
        if (error) reject(error);
        else resolve();
      };
      const onReady = () => done();
      const onClose = () =>
        done(new Error('the client could not connect to Redis (its `error` events say why).'));
      // Unreferenced: a wait must never be what keeps a process alive.
      const timer = setTimeout(
        () => done(new Error(`the client was not connected to Redis within ${this.#readyTimeoutMs} ms.`)),
        this.#readyTimeoutMs,
      );
      (timer as { unref?: () => void }).unref?.();
      redis.on('ready', onReady);
      redis.on('close', onClose);
      redis.on('end', onClose);
      // lazyConnect: connect now, as ioredis would on this first command; a failure ends in `close` or `end`.
      if (redis.status === 'wait') redis.connect().catch(() => {});
    });
    return this.#firstConnection;
  }
}

function unexpected(operation: string, answer: unknown): StoreUnavailableError {
  return new StoreUnavailableError(
    `RedisStore ${operation} got an unexpected reply from Redis: ${JSON.stringify(answer)}.`,
  );
}
