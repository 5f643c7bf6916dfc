/**
 * What the RabbitMQ tests share: the broker on this machine (127.0.0.1:5672, guest/guest, or
 * AMQP_URL), queue names with a random suffix per test so that parallel runs never meet, a connection
 * of the test's own to publish raw messages and delete queues, and a proxy whose connections a test
 * cuts, as a network cut or a broker restart would.
 */

import type { AddressInfo } from 'node:net';
import { createServer, type Socket, connect as tcpConnect } from 'node:net';
import { type ChannelModel, connect } from 'amqplib';
import { DELAY_STEPS_MS, queuesOf } from 'service-webhooks/rabbitmq';

export const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

/** A unique queue name per test. */
export function uniqueQueue(label: string): string {
  return `sw-test-${label}-${crypto.randomUUID().slice(0, 8)}`;
}

/** Every queue of an inbox: the inbox queue, its dead letters and its holding queues. */
export function allQueues(queue: string): string[] {
  const queues = queuesOf(queue);
  return [queues.queue, queues.deadLetters, ...DELAY_STEPS_MS.map((step) => queues.delay(step))];
}

/** A connection of the test's own. */
export async function openConnection(): Promise<ChannelModel> {
  const connection = await connect(AMQP_URL);
  connection.on('error', () => {});
  return connection;
}

/** Delete every queue of the inbox `queue` (missing ones too). */
export async function deleteQueues(connection: ChannelModel, queue: string): Promise<void> {
  const channel = await connection.createChannel();
  channel.on('error', () => {});
  try {
    for (const name of allQueues(queue)) await channel.deleteQueue(name);
  } finally {
    await channel.close().catch(() => {});
  }
}

/**
 * A TCP proxy to the broker whose open connections the test can cut (as a network cut or a broker
 * restart does to a client: the socket ends under it), while it keeps taking new ones. RabbitMQ's own
 * `rabbitmqctl close_connection` needs the broker's connection tracking, which this machine's broker
 * does not list, so the cut is made on the client's side of the socket.
 */
export interface BrokerProxy {
  /** The broker's URL through the proxy. */
  readonly url: string;
  /** End every connection open through the proxy now; answers how many. */
  cut(): number;
  close(): Promise<void>;
}

/** Start a {@link BrokerProxy} on a free loopback port. */
export async function startProxy(): Promise<BrokerProxy> {
  const target = new URL(AMQP_URL);
  const pairs = new Set<[Socket, Socket]>();
  const server = createServer((client) => {
    const upstream = tcpConnect(Number(target.port || 5672), target.hostname);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    for (const socket of pair) {
      socket.on('error', () => {});
      socket.on('close', () => {
        pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(AMQP_URL);
  url.host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  const cut = (): number => {
    const open = pairs.size;
    for (const pair of [...pairs]) for (const socket of pair) socket.destroy();
    return open;
  };
  return {
    url: url.toString(),
    cut,
    async close() {
      cut();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
