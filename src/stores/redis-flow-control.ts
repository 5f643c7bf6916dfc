/**
 * Flow-control state on Redis: each operation one Lua script (one round trip, atomic), on Redis's
 * own clock (`TIME`), so the workers' clocks need not agree. A rate is a sorted set of the window's
 * grants; a key's slots a sorted set of holders scored by the end of their lease.
 */

import type { Cluster, Redis } from 'ioredis';
import { ConfigurationError, type FlowControl, type FlowGrant } from 'service-webhooks/core';

/**
 * Options of {@link RedisFlowControl}.
 *
 * @example
 * ```ts
 * new RedisFlowControl({ client: new Redis(process.env.REDIS_URL!), prefix: 'myapp:flow:' });
 * ```
 */
export interface RedisFlowControlOptions {
  /** An ioredis client or Cluster; never closed here. Make it fail fast (`maxRetriesPerRequest: 1`) where you can: the worker bounds each call anyway. */
  readonly client: Redis | Cluster;
  /** Prefix of every key. @default 'service-webhooks:flow:' */
  readonly prefix?: string;
}

// KEYS[1] the window's grants; ARGV max, window (ms), member. 0: granted; else the wait in ms.
const RATE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(1, tonumber(oldest[2]) + window - now)`;

// KEYS[1] the key's holders; ARGV max, lease (ms), holder. 0: granted; else the wait in ms.
const SLOT_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[3]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + lease, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], lease)
  return 0
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(1, tonumber(first[2]) - now)`;

// KEYS[1] the key's holders; ARGV lease (ms), holder. 1: renewed; 0: the lease had ended.
const RENEW_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local until_ = redis.call('ZSCORE', KEYS[1], ARGV[2])
if not until_ or tonumber(until_) <= now then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[2])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 1`;

const RATE = 'serviceWebhooksFlowRate';
const SLOT = 'serviceWebhooksFlowSlot';
const RENEW = 'serviceWebhooksFlowRenew';

type Scripted = Record<string, (...args: (string | number)[]) => Promise<number>>;

/**
 * {@link FlowControl} on Redis. A BullMQ worker makes one on its own connection; give one to an SQS
 * worker (`flowControl`), or the `RedisStore` whose `flowControl()` makes one on the store's client.
 *
 * @example
 * ```ts
 * import { RedisFlowControl } from 'service-webhooks/redis';
 *
 * startSqsWorker(webhooks, { client: sqs, queueUrl, rate: { max: 10, perMs: 1_000 }, flowControl: new RedisFlowControl({ client: redis }) });
 * ```
 */
export class RedisFlowControl implements FlowControl {
  readonly #client: Scripted;
  readonly #redis: Redis | Cluster;
  readonly #prefix: string;

  constructor(options: RedisFlowControlOptions) {
    const client: unknown = options?.client;
    if (typeof (client as Partial<Redis> | undefined)?.defineCommand !== 'function') {
      throw new ConfigurationError(
        'RedisFlowControl needs an ioredis client (or Cluster): new RedisFlowControl({ client }).',
      );
    }
    const prefix = options.prefix ?? 'service-webhooks:flow:';
    if (typeof prefix !== 'string') {
      throw new ConfigurationError(`RedisFlowControl \`prefix\` must be a string; got ${String(prefix)}.`);
    }
    const redis = client as Redis | Cluster;
    const scripted = redis as unknown as Scripted;
    // Shared by every instance on one client: defined once.
    if (typeof scripted[RATE] !== 'function') {
      redis.defineCommand(RATE, { numberOfKeys: 1, lua: RATE_LUA });
      redis.defineCommand(SLOT, { numberOfKeys: 1, lua: SLOT_LUA });
      redis.defineCommand(RENEW, { numberOfKeys: 1, lua: RENEW_LUA });
    }
    this.#client = scripted;
    this.#redis = redis;
    this.#prefix = prefix;
  }

  async acquireRate(key: string, max: number, windowMs: number): Promise<FlowGrant> {
    const member = `${Date.now()}:${crypto.randomUUID()}`;
    return grantOf(await this.#client[RATE]!(this.#prefix + key, max, Math.ceil(windowMs), member));
  }

  async acquireSlot(key: string, holder: string, max: number, leaseMs: number): Promise<FlowGrant> {
    return grantOf(await this.#client[SLOT]!(this.#prefix + key, max, Math.ceil(leaseMs), holder));
  }

  async renewSlot(key: string, holder: string, leaseMs: number): Promise<boolean> {
    return (await this.#client[RENEW]!(this.#prefix + key, Math.ceil(leaseMs), holder)) === 1;
  }

  async releaseSlot(key: string, holder: string): Promise<void> {
    await this.#redis.zrem(this.#prefix + key, holder);
  }
}

function grantOf(answer: number): FlowGrant {
  const waitMs = Number(answer);
  return waitMs === 0 ? { granted: true } : { granted: false, waitMs };
}
