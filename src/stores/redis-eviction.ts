/**
 * Whether a Redis may evict what the library keeps there, checked before anything is at risk. Bundled
 * into the Redis store and the BullMQ engine, like store-encoding.ts.
 *
 * Every key the store writes carries a TTL (a lease or a completion's memory), so a `volatile-*` policy
 * may evict them just as an `allkeys-*` one may: an evicted completion runs the event's handlers again,
 * an evicted lease lets a concurrent copy run alongside, an evicted job is an acknowledged event that
 * never runs. Only `noeviction` (Redis answers writes with an error when full, which the receiver turns
 * into a 503 and the sender retries) keeps every promise. A Redis with no `maxmemory` never evicts,
 * whatever its policy says.
 */
import type { Cluster, Redis } from 'ioredis';
import { ConfigurationError } from 'service-webhooks/core';
import type { BackgroundErrors } from './background-errors.js';

/**
 * What to do about an eviction policy that could lose events: refuse to work with it (the default:
 * every call fails as an outage would, 503, until the policy is `noeviction`), or report it to
 * `onError` once and go on (you accept that evicted records run events again or lose queued ones).
 *
 * @example
 * ```ts
 * new RedisStore({ client, evictionPolicy: 'report' }); // a cache-first Redis you cannot change yet
 * ```
 */
export type EvictionPolicyMode = 'refuse' | 'report';

/** The `evictionPolicy` option, checked (`what` names its owner in the error). */
export function evictionPolicyMode(mode: unknown, what: string): EvictionPolicyMode {
  if (mode === undefined) return 'refuse';
  if (mode === 'refuse' || mode === 'report') return mode;
  throw new ConfigurationError(
    `${what} \`evictionPolicy\` must be 'refuse' or 'report'; got ${JSON.stringify(mode)}.`,
  );
}

/** How long a check's verdict holds before the next call checks again (a failover, a CONFIG SET). */
const RECHECK_EVERY_MS = 60_000;

type Node = Pick<Redis, 'info' | 'config'>;

/** The policy of one server: `undefined` when it lets neither INFO nor CONFIG GET be read. */
async function readPolicy(node: Node): Promise<{ policy: string; maxmemory: number } | undefined> {
  try {
    const info = await node.info('memory');
    const policy = /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
    const maxmemory = /^maxmemory:(\d+)/m.exec(info)?.[1];
    if (policy !== undefined) return { policy, maxmemory: Number(maxmemory ?? 1) };
  } catch (error) {
    if (!isRefusal(error)) throw error;
  }
  try {
    // Managed services that hide INFO sections may still answer CONFIG GET, and the other way round.
    const [, policy] = (await node.config('GET', 'maxmemory-policy')) as string[];
    const [, maxmemory] = (await node.config('GET', 'maxmemory')) as string[];
    if (typeof policy === 'string') return { policy, maxmemory: Number(maxmemory ?? 1) };
  } catch (error) {
    if (!isRefusal(error)) throw error;
  }
  return undefined;
}

/** Redis answered, and the answer was no (unknown or renamed command, ACL): not an outage. */
function isRefusal(error: unknown): boolean {
  return (error as Error | undefined)?.name === 'ReplyError';
}

function nodesOf(client: Redis | Cluster): Node[] {
  return 'nodes' in client && typeof client.nodes === 'function' && (client as Cluster).isCluster
    ? (client as Cluster).nodes('master')
    : [client as Redis];
}

/**
 * Checks the eviction policy of a client's server (every master of a Cluster) on its first use, and
 * again at most once a minute after that, without delaying calls once a verdict is known.
 *
 * @example
 * ```ts
 * const guard = new EvictionGuard(client, 'RedisStore', 'refuse', backgroundErrors);
 * await guard.check(); // rejects with ConfigurationError while the policy could evict
 * ```
 */
export class EvictionGuard {
  readonly #client: Redis | Cluster;
  readonly #what: string;
  readonly #mode: EvictionPolicyMode;
  readonly #errors: BackgroundErrors;
  /** The refusal in force, while the last check found an unsafe policy and the mode is 'refuse'. */
  #refusal: ConfigurationError | undefined;
  /** When the verdict in force was reached (performance.now()); -Infinity before the first. */
  #checkedAt = Number.NEGATIVE_INFINITY;
  /** The check under way, shared by the calls that wait for it. */
  #checking: Promise<void> | undefined;
  /** The unsafe policy last reported, so a policy that stays unsafe is said once, not every minute. */
  #reported: string | undefined;

  constructor(
    client: Redis | Cluster,
    what: string,
    mode: EvictionPolicyMode | undefined,
    errors: BackgroundErrors,
  ) {
    this.#client = client;
    this.#what = what;
    this.#mode = evictionPolicyMode(mode, what);
    this.#errors = errors;
  }

  /**
   * Undefined when a call may go ahead now (the common case: a safe verdict); otherwise a promise
   * that fulfils when a check found the policy safe (or could not read it), and rejects with a
   * `ConfigurationError` while it is unsafe and the mode is 'refuse'.
   */
  check(): Promise<void> | undefined {
    // Before a first verdict, and while refusing (so that a fixed policy is seen at once: a refused
    // call is an outage to the sender anyway), each call waits for a check. Otherwise a stale safe
    // verdict is refreshed in the background and the call goes ahead on it.
    const waits = this.#refusal !== undefined || this.#checkedAt === Number.NEGATIVE_INFINITY;
    if (!waits && performance.now() - this.#checkedAt < RECHECK_EVERY_MS) return undefined;
    this.#checking ??= this.#run().finally(() => {
      this.#checking = undefined;
    });
    if (waits) return this.#checking.then(() => this.#verdict());
    this.#checking.catch(() => {});
    return undefined;
  }

  #verdict(): void {
    if (this.#refusal) throw this.#refusal;
  }

  async #run(): Promise<void> {
    let unsafe: { policy: string; node: string } | undefined;
    // A client that is not connected has nothing to ask (and a hung handshake would make the question
    // wait out the command timeout): no verdict, and the call fails fast on its own.
    const { status, isCluster } = this.#client as { status?: string; isCluster?: boolean };
    if (status !== 'ready' && !(isCluster === true && status === 'connect')) return;
    const nodes = nodesOf(this.#client);
    // A Cluster that has not discovered its masters yet: no verdict, the next call asks again.
    if (nodes.length === 0) return;
    try {
      for (const node of nodes) {
        const found = await readPolicy(node);
        if (found && found.policy !== 'noeviction' && found.maxmemory > 0) {
          const { host, port } = (node as { options?: { host?: string; port?: number } }).options ?? {};
          unsafe = { policy: found.policy, node: host === undefined ? 'Redis' : `Redis at ${host}:${port}` };
          break;
        }
      }
    } catch {
      // Redis is unreachable: no verdict. The call fails on its own, and the next one checks again.
      return;
    }
    this.#checkedAt = performance.now();
    if (!unsafe) {
      this.#refusal = undefined;
      this.#reported = undefined;
      return;
    }
    const error = new ConfigurationError(
      `${this.#what}: ${unsafe.node} has maxmemory-policy ${unsafe.policy}, which evicts keys when memory runs out: an evicted record runs a handled event again, an evicted job loses an acknowledged event. Set maxmemory-policy to noeviction (CONFIG SET maxmemory-policy noeviction, or your provider's parameter group)${
        this.#mode === 'refuse'
          ? ". Until then every event is refused with 503, so the sender keeps it (evictionPolicy: 'report' accepts the risk instead)."
          : "; evictionPolicy: 'report' goes on regardless."
      }`,
    );
    if (this.#mode === 'refuse') this.#refusal = error;
    if (this.#reported !== unsafe.policy) {
      this.#reported = unsafe.policy;
      this.#errors.report(error);
    }
  }
}
