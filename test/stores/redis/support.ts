/**
 * The servers the Redis store's conformance and model tests run on: a standalone server and a
 * three-master Cluster (or REDIS_URL / REDIS_CLUSTER_NODES), with fail-fast clients, connected.
 */
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';
import { startCluster, startStandalone } from '../../support/redis-servers.js';

/** Clients that fail a command at once while disconnected, rather than queue it until Redis is back. */
const FAIL_FAST = { enableOfflineQueue: false, maxRetriesPerRequest: 1 } as const;

export interface RedisTopologies {
  /** A fail-fast client of the standalone server. */
  readonly redis: Redis;
  /** A fail-fast client of the Cluster. */
  readonly clusterClient: Cluster;
  /** One more fail-fast client of the standalone server, with `options` on top; connected, closed by `stop`. */
  standaloneClient(options: RedisOptions): Promise<Redis>;
  /** One more fail-fast client of the Cluster, with `options` on top; connected, closed by `stop`. */
  newClusterClient(options: ClusterOptions): Promise<Cluster>;
  /** Disconnect every client, then stop the servers the tests started. */
  stop(): Promise<void>;
}

const ready = (client: Redis | Cluster) => new Promise((resolve) => client.once('ready', resolve));

/** Start both servers at once and connect a client to each. */
export async function startRedisTopologies(): Promise<RedisTopologies> {
  const [standalone, cluster] = await Promise.all([startStandalone(), startCluster()]);
  const clients: (Redis | Cluster)[] = [];
  const connected = async <C extends Redis | Cluster>(client: C): Promise<C> => {
    clients.push(client);
    await ready(client);
    return client;
  };
  const standaloneClient = (options: RedisOptions) =>
    connected(new Redis(standalone.url, { ...FAIL_FAST, ...options }));
  const newClusterClient = (options: ClusterOptions) =>
    connected(
      new Cluster([...cluster.nodes], {
        enableOfflineQueue: false,
        ...options,
        redisOptions: { maxRetriesPerRequest: 1, ...options.redisOptions },
      }),
    );
  const [redis, clusterClient] = await Promise.all([standaloneClient({}), newClusterClient({})]);
  return {
    redis,
    clusterClient,
    standaloneClient,
    newClusterClient,
    async stop() {
      for (const client of clients) client.disconnect();
      await Promise.all([standalone.stop(), cluster.stop()]);
    },
  };
}
