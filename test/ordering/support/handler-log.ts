/**
 * Where the ordering property test's handlers say what they did, for the oracles of
 * ./ordering-scenario.ts: each run marks its resource busy as it starts (counting an overlap when it
 * already was), appends itself to the resource's runs, then writes its event's version as the
 * resource's state and clears the mark as it ends. In one process a Map does it; across processes a
 * Redis of the test's own, where `SET NX` decides between two runs that start together.
 */
import type { Redis } from 'ioredis';
import type { HandlerRun, LoggedRuns, Scenario } from './ordering-scenario.js';

export interface HandlerLog {
  begin(run: HandlerRun): Promise<void>;
  end(run: HandlerRun): Promise<void>;
  read(scenario: Scenario): Promise<LoggedRuns>;
}

/** The log of handlers that all run in this process. */
export class LocalHandlerLog implements HandlerLog {
  readonly #active = new Map<string, number>();
  readonly #runs = new Map<string, HandlerRun[]>();
  readonly #overlaps = new Map<string, number>();
  readonly #state = new Map<string, number>();

  async begin(run: HandlerRun): Promise<void> {
    const active = this.#active.get(run.resource) ?? 0;
    if (active > 0) this.#overlaps.set(run.resource, (this.#overlaps.get(run.resource) ?? 0) + 1);
    this.#active.set(run.resource, active + 1);
    const runs = this.#runs.get(run.resource) ?? [];
    runs.push(run);
    this.#runs.set(run.resource, runs);
  }

  async end(run: HandlerRun): Promise<void> {
    this.#state.set(run.resource, run.version);
    this.#active.set(run.resource, (this.#active.get(run.resource) ?? 1) - 1);
  }

  async read(_scenario?: Scenario): Promise<LoggedRuns> {
    return { runs: this.#runs, overlaps: this.#overlaps, state: this.#state };
  }
}

/** The log shared by handlers in several processes, in one Redis under `prefix`. */
export class RedisHandlerLog implements HandlerLog {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#prefix = prefix;
  }

  async begin(run: HandlerRun): Promise<void> {
    const taken = await this.#redis.set(this.#key('active', run.resource), run.eventId, 'PX', 60_000, 'NX');
    if (taken === null) await this.#redis.hincrby(this.#key('overlaps'), run.resource, 1);
    await this.#redis.rpush(this.#key('runs', run.resource), JSON.stringify(run));
  }

  async end(run: HandlerRun): Promise<void> {
    await this.#redis.set(this.#key('state', run.resource), String(run.version));
    await this.#redis.del(this.#key('active', run.resource));
  }

  async read(scenario: Scenario): Promise<LoggedRuns> {
    const runs = new Map<string, HandlerRun[]>();
    const state = new Map<string, number>();
    const overlaps = new Map<string, number>();
    const counted = await this.#redis.hgetall(this.#key('overlaps'));
    for (const { resource } of scenario.histories) {
      const logged = await this.#redis.lrange(this.#key('runs', resource), 0, -1);
      runs.set(
        resource,
        logged.map((line) => JSON.parse(line) as HandlerRun),
      );
      const version = await this.#redis.get(this.#key('state', resource));
      if (version !== null) state.set(resource, Number(version));
      if (counted[resource] !== undefined) overlaps.set(resource, Number(counted[resource]));
    }
    return { runs, overlaps, state };
  }

  /** Delete every key of this log. */
  async clear(): Promise<void> {
    const keys: string[] = [];
    for await (const batch of this.#redis.scanStream({ match: `${this.#prefix}*`, count: 1_000 })) {
      keys.push(...(batch as string[]));
    }
    if (keys.length > 0) await this.#redis.del(...keys);
  }

  #key(kind: string, resource = ''): string {
    return `${this.#prefix}${kind}:${resource}`;
  }
}
