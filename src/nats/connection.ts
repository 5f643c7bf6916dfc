/**
 * The NATS connection of a worker or an admin: one the application owns and passes in, or a
 * `nats://` URL from which the inbox connects (and later closes what it opened).
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ConfigurationError } from 'service-webhooks/core';
import { checkConnection } from './streams.js';

/**
 * Where the inbox's NATS is: a connection the application made and owns (the inbox never closes
 * it), or a `nats://` URL (a comma-separated list for a cluster) from which the inbox connects.
 *
 * @example
 * ```ts
 * const connection: NatsInboxConnection = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
 * ```
 */
export type NatsInboxConnection = NatsConnection | string;

/** A connection and who closes it. */
export interface OpenedConnection {
  readonly connection: NatsConnection;
  /** Close the connection if the inbox made it; leave an application's alone. */
  close(): Promise<void>;
}

/**
 * The connection for `connection`: the application's as it is, or a new one from the URL. A worker's
 * own connection reconnects without end (a restarted server is met again); an admin's gives up after
 * a few tries, so a command ends.
 */
export async function openConnection(
  connection: unknown,
  what: string,
  role: 'worker' | 'admin',
): Promise<OpenedConnection> {
  if (typeof connection === 'string') {
    if (!/^(nats|tls|wss?):\/\//i.test(connection.split(',')[0]!.trim())) {
      throw new ConfigurationError(
        `${what} \`connection\` must be a nats:// URL or a NATS connection; got ${connection}.`,
      );
    }
    const opened = await connect({
      servers: connection.split(',').map((server) => server.trim()),
      name: `service-webhooks ${role}`,
      ...(role === 'worker'
        ? { maxReconnectAttempts: -1, reconnectTimeWait: 500 }
        : { maxReconnectAttempts: 2 }),
    });
    return {
      connection: opened,
      close: async () => {
        if (!opened.isClosed()) await opened.drain().catch(() => opened.close());
      },
    };
  }
  return { connection: checkConnection(connection, what), close: async () => {} };
}
