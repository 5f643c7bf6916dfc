/**
 * One AMQP connection and its confirm channel, as the door, the worker and the admin each hold one:
 * opened on first use, dropped whole when either closes (RabbitMQ closes a channel on any error, and a
 * delivery's tag means nothing on another channel), opened again by the next use. Publishing here
 * always waits for the broker's confirm, and a message the broker could not route (`mandatory`) is
 * refused, not taken for written.
 */
import { randomUUID } from 'node:crypto';
import { type ChannelModel, type ConfirmChannel, connect } from 'amqplib';
import { RabbitMQPublishError } from './errors.js';

/**
 * An open connection and its channel; `closed` once either closed, never open again.
 *
 * @example
 * ```ts
 * const live = await link.open();
 * if (!live.closed) live.channel.ack(message);
 * ```
 */
export interface Live {
  readonly connection: ChannelModel;
  readonly channel: ConfirmChannel;
  /** Counts the connections this link opened, from 1: names the one a delivery came on in logs. */
  readonly generation: number;
  closed: boolean;
  /** Publishes waiting for their confirm, by message id: a `basic.return` refuses them. */
  readonly returned: Set<string>;
  /** The publishes waiting for their confirm: refused at once when the channel closes. */
  readonly waiting: Set<() => void>;
}

/**
 * How a {@link Link} connects.
 *
 * @example
 * ```ts
 * new Link('amqp://127.0.0.1', { connectTimeoutMs: 5_000, connectionName: 'webhooks-door', setup: (channel) => declareQueues(channel, queues, false) });
 * ```
 */
export interface LinkOptions {
  /** How long a connection attempt may take (the TCP connect and AMQP's handshake). */
  readonly connectTimeoutMs: number;
  /** Shown by `rabbitmqctl list_connections user_provided_name` and the management UI. */
  readonly connectionName?: string | undefined;
  /** Run on each new channel before it is used (declare the queues, set the prefetch). */
  readonly setup?: (channel: ConfirmChannel) => Promise<unknown>;
  /** Told when an open connection is lost (not when `close()` closed it). */
  readonly onLost?: (live: Live, error: unknown) => void;
}

/**
 * A connection that is opened on demand and dropped whole when it or its channel closes.
 *
 * @example
 * ```ts
 * const link = new Link(url, { connectTimeoutMs: 5_000 });
 * await publishConfirmed(await link.open(), queue, message, 5_000);
 * await link.close();
 * ```
 */
export class Link {
  readonly #url: string;
  readonly #options: LinkOptions;
  #current: Promise<Live> | undefined;
  #generation = 0;
  #closed = false;

  constructor(url: string, options: LinkOptions) {
    this.#url = url;
    this.#options = options;
  }

  /** The open connection, or a new one; rejects when the broker cannot be reached (tried again next call). */
  open(): Promise<Live> {
    if (this.#closed) return Promise.reject(new Error('the RabbitMQ link was closed'));
    if (!this.#current) {
      const opening = this.#connect();
      this.#current = opening;
      opening.catch(() => {
        if (this.#current === opening) this.#current = undefined;
      });
    }
    return this.#current;
  }

  /** The connection when one is open now (no attempt to open one). */
  async current(): Promise<Live | undefined> {
    const live = await this.#current?.catch(() => undefined);
    return live && !live.closed ? live : undefined;
  }

  /**
   * Close the connection (the broker requeues whatever it had handed out on it); no use after. The
   * publishes already sent are waited for first (each within its own deadline), so that a door that
   * closes while requests are in flight answers them as the broker did, not 503 for its own closing;
   * `drain: false` (a worker's forced close) closes at once.
   */
  async close(drain = true): Promise<void> {
    this.#closed = true;
    const live = await this.#current?.catch(() => undefined);
    this.#current = undefined;
    if (!live || live.closed) return;
    while (drain && live.waiting.size > 0 && !live.closed)
      await new Promise((resolve) => setTimeout(resolve, 5));
    if (live.closed) return;
    live.closed = true;
    for (const refuse of [...live.waiting]) refuse();
    await live.connection.close().catch(() => {});
  }

  async #connect(): Promise<Live> {
    const { connectTimeoutMs, connectionName } = this.#options;
    const connection = await connect(this.#url, {
      timeout: connectTimeoutMs,
      ...(connectionName === undefined ? {} : { clientProperties: { connection_name: connectionName } }),
    });
    // Without a listener an 'error' event would end the process; the 'close' that follows says it all.
    connection.on('error', () => {});
    let channel: ConfirmChannel;
    try {
      channel = await connection.createConfirmChannel();
    } catch (error) {
      await connection.close().catch(() => {});
      throw error;
    }
    channel.on('error', () => {});
    const live: Live = {
      connection,
      channel,
      generation: ++this.#generation,
      closed: false,
      returned: new Set(),
      waiting: new Set(),
    };
    channel.on('return', (message: { properties: { messageId?: unknown } }) => {
      const id = message.properties.messageId;
      if (typeof id === 'string') live.returned.add(id);
    });
    const lost = (error: unknown): void => {
      if (live.closed) return;
      live.closed = true;
      for (const refuse of [...live.waiting]) refuse();
      if (this.#current !== undefined) {
        void this.#current.then(
          (now) => {
            if (now === live) this.#current = undefined;
          },
          () => {},
        );
      }
      // A channel closed by the broker leaves its connection open: closed too, so that a new link
      // starts clean and the broker requeues what was handed out on it.
      connection.close().catch(() => {});
      if (!this.#closed) this.#options.onLost?.(live, error);
    };
    channel.on('close', () => lost(new Error('the RabbitMQ channel closed')));
    connection.on('close', (error?: unknown) => lost(error ?? new Error('the RabbitMQ connection closed')));
    try {
      await this.#options.setup?.(channel);
    } catch (error) {
      live.closed = true;
      await connection.close().catch(() => {});
      throw error;
    }
    if (this.#closed) {
      live.closed = true;
      await connection.close().catch(() => {});
      throw new Error('the RabbitMQ link was closed');
    }
    return live;
  }
}

/**
 * What a publish carries beside the body: headers and, optionally, the message id.
 *
 * @example
 * ```ts
 * await publishConfirmed(live, queue, { body, headers, messageId: randomUUID() }, 5_000);
 * ```
 */
export interface Publication {
  readonly body: Buffer;
  readonly headers: Record<string, unknown>;
  /** @default a new UUID */
  readonly messageId?: string;
}

/**
 * Publish to `queue` (through the default exchange) as a persistent, `mandatory` message and resolve
 * once the broker confirmed it: it is then on disk in a durable queue. Rejects with
 * {@link RabbitMQPublishError} when the broker returned it (no such queue), refused it (a nack: the
 * queue could not take it), did not confirm it within `timeoutMs`, or the channel closed first.
 * Answers the message's id.
 *
 * @example
 * ```ts
 * const messageId = await publishConfirmed(await link.open(), 'service-webhooks-inbox', messageOf(entry, meta), 5_000);
 * ```
 */
export function publishConfirmed(
  live: Live,
  queue: string,
  publication: Publication,
  timeoutMs: number,
): Promise<string> {
  const messageId = publication.messageId ?? randomUUID();
  return new Promise<string>((resolve, reject) => {
    if (live.closed) {
      reject(new RabbitMQPublishError('closed', queue));
      return;
    }
    let settled = false;
    const finish = (error: RabbitMQPublishError | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      live.returned.delete(messageId);
      live.waiting.delete(onClose);
      if (error) reject(error);
      else resolve(messageId);
    };
    const onClose = (): void => finish(new RabbitMQPublishError('closed', queue));
    const timer = setTimeout(
      () => finish(new RabbitMQPublishError('unconfirmed', queue, timeoutMs)),
      timeoutMs,
    );
    live.waiting.add(onClose);
    try {
      live.channel.publish(
        '',
        queue,
        publication.body,
        {
          persistent: true,
          mandatory: true,
          messageId,
          contentType: 'application/json',
          timestamp: Date.now(),
          headers: publication.headers,
        },
        (error: unknown) => {
          // A basic.return reaches the channel before the confirm of the same message.
          if (live.returned.has(messageId)) finish(new RabbitMQPublishError('returned', queue));
          else if (error) finish(new RabbitMQPublishError(live.closed ? 'closed' : 'nacked', queue));
          else finish(undefined);
        },
      );
    } catch (error) {
      finish(new RabbitMQPublishError('closed', queue, undefined, error));
    }
  });
}
