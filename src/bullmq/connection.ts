/**
 * The Redis connections of the inbox: a client the application owns and passes in, or a URL from
 * which the inbox makes (and later closes) a client with the options its role needs.
 */
import type { QueueOptions } from 'bullmq';
import { type Cluster, Redis, type RedisOptions } from 'ioredis';
import { ConfigurationError } from 'service-webhooks/core';

/**
 * Where the inbox's Redis is: an ioredis `Redis` or `Cluster` the application creates and owns (the
 * inbox never closes it), or a `redis://` / `rediss://` URL, from which the inbox makes a client of
 * its own, closed by `close()`.
 *
 * @example
 * ```ts
 * const connection: InboxConnection = process.env.REDIS_URL!;
 * const shared: InboxConnection = new Redis(process.env.REDIS_URL!, { maxRetriesPerRequest: null });
 * ```
 */
export type InboxConnection = Redis | Cluster | string;

/**
 * The key prefix and queue name every part of one inbox must share.
 *
 * @example
 * ```ts
 * const where: InboxLocation = { queueName: 'billing-webhooks', prefix: 'bull' };
 * ```
 */
export interface InboxLocation {
  /**
   * The BullMQ queue name (no `:`): one per receiver that keeps its own inbox.
   * @default 'service-webhooks-inbox'
   */
  readonly queueName?: string;
  /**
   * BullMQ's key prefix, to keep the queue apart from other data in one Redis.
   * @default 'bull'
   */
  readonly prefix?: string;
}

/** A client and who closes it. */
export interface OpenedClient {
  readonly client: Redis | Cluster;
  /** Close the client if the inbox made it; leave an application's client alone. */
  close(): Promise<void>;
  /** Drop the client's connection at once, without waiting for Redis, if the inbox made it. */
  cut(): void;
}

function isClient(value: unknown): value is Redis | Cluster {
  return typeof (value as Partial<Redis> | undefined)?.defineCommand === 'function';
}

/**
 * The client for `connection`: the application's as it is, or a new one made from the URL with
 * `defaults` (`what` names the caller in errors).
 */
export function openClient(connection: unknown, defaults: RedisOptions, what: string): OpenedClient {
  if (isClient(connection)) return { client: connection, close: async () => {}, cut: () => {} };
  if (typeof connection === 'string' && /^rediss?:\/\//i.test(connection)) {
    const client = new Redis(connection, defaults);
    // A client the inbox owns has no other listener: its connection errors would be printed by
    // ioredis on every reconnection attempt. The failures that matter surface where they are used.
    client.on('error', () => {});
    return {
      client,
      close: async () => {
        if (client.status === 'end') return;
        try {
          await client.quit();
        } catch {
          client.disconnect();
        }
      },
      cut: () => client.disconnect(),
    };
  }
  throw new ConfigurationError(
    `${what} needs \`connection\`: an ioredis client (new Redis(...) or a Cluster) or a redis:// URL; got ${describe(connection)}.`,
  );
}

/**
 * The options of `queueName` and `prefix` as BullMQ takes them, checked: BullMQ refuses `:` in a
 * queue name, and an ioredis `keyPrefix` (its own `prefix` replaces it).
 */
export function location(
  options: InboxLocation,
  defaultName: string,
  what: string,
): { readonly queueName: string; readonly prefix: Pick<QueueOptions, 'prefix'> } {
  const queueName = options.queueName ?? defaultName;
  if (typeof queueName !== 'string' || queueName === '' || queueName.includes(':')) {
    throw new ConfigurationError(
      `${what} \`queueName\` must be a non-empty string without \`:\`; got ${JSON.stringify(queueName)}.`,
    );
  }
  const { prefix } = options;
  if (prefix !== undefined && (typeof prefix !== 'string' || prefix === '')) {
    throw new ConfigurationError(
      `${what} \`prefix\` must be a non-empty string; got ${JSON.stringify(prefix)}.`,
    );
  }
  return { queueName, prefix: prefix === undefined ? {} : { prefix } };
}

/** Whether the client can send commands now (an ioredis Cluster reports `connect` once usable). */
export function isLive(client: { readonly status?: string; readonly isCluster?: boolean }): boolean {
  return client.status === 'ready' || (client.status === 'connect' && client.isCluster === true);
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.slice(0, 40))}`;
  return typeof value;
}
