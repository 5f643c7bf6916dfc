/**
 * The SIGKILL runs' shared parts, one per engine (BullMQ, pg-boss, SQS, RabbitMQ, NATS): the chaos
 * that kills one worker process at a time and starts another, and the verdict that every event's
 * handler ran once but for the crash window ({@link judgeSecondRuns}). What differs per engine (how
 * the door is reached, when the queue has drained, where the runs are logged, the engine's own sign
 * that kills hit events mid-run) stays in each engine's test.
 */
import { Redis } from 'ioredis';
import type { WebhookResponse } from 'service-webhooks';
import { expect } from 'vitest';
import { judgeSecondRuns, type LoggedRun } from './crash-window.js';
import { handledEventsKey } from './handled-events.js';
import { RedisServer } from './redis-servers.js';

/** A worker process the chaos may kill. */
export interface KillableWorker {
  readonly pid: number;
  readonly child: { kill(signal: NodeJS.Signals): boolean };
  readonly exited: Promise<unknown>;
}

/** When a victim was seen dead: a run it logged between the signal and its death was cut short. */
export interface Kill {
  readonly pid: number;
  readonly at: number;
}

/** The most workers one SIGKILL run kills (see {@link killOneEvery}). */
export const MAX_KILLS = 10;

/**
 * Kill one of `workers` (chosen at random) every `everyMs` with SIGKILL and start a replacement, until
 * `stop()`. `workers` is kept current, so the test's cleanup stops the living ones.
 *
 * The next kill comes `everyMs` after the last one, or when its replacement is ready if that takes
 * longer: one replacement starts at a time. A chaos that waited for the replacement and then
 * `everyMs` more killed once every few seconds on a busy machine (a NATS run of 2,000 events ended
 * after two kills); one that never waited killed 14-22 workers a run, each a process start under tsx,
 * and made the SIGKILL files half as slow again. The kills go on through the run, so some hit events
 * whose messages come back while the dead run's claim still holds, which the engines' tests look for;
 * at most {@link MAX_KILLS} of them.
 */
export function killOneEvery<W extends KillableWorker>(
  everyMs: number,
  workers: Set<W>,
  startWorker: () => Promise<W>,
): { readonly kills: readonly Kill[]; stop(): Promise<void> } {
  const kills: Kill[] = [];
  const starting = new Set<Promise<void>>();
  /** The first replacement that failed to start: the run stops killing, and stop() throws it. */
  let failed: { readonly error: unknown } | undefined;
  let done = false;
  const replace = () => {
    const started: Promise<void> = startWorker().then(
      (worker) => {
        workers.add(worker);
        starting.delete(started);
      },
      (error: unknown) => {
        starting.delete(started);
        failed ??= { error };
      },
    );
    starting.add(started);
  };
  const chaos = (async () => {
    while (!done) {
      await new Promise((resolve) => setTimeout(resolve, everyMs));
      await Promise.all([...starting]);
      if (done || failed || kills.length >= MAX_KILLS) break;
      if (workers.size < 2) continue;
      const victim = [...workers][Math.floor(Math.random() * workers.size)]!;
      workers.delete(victim);
      victim.child.kill('SIGKILL');
      await victim.exited;
      kills.push({ pid: victim.pid, at: Date.now() });
      replace();
    }
  })();
  return {
    kills,
    async stop() {
      done = true;
      await chaos;
      await Promise.all([...starting]);
      if (failed) throw failed.error;
    },
  };
}

/** The runs the workers logged, one `eventId pid at` line each, grouped by event. */
export function runsByEvent(lines: readonly string[]): Map<string, LoggedRun[]> {
  const runs = new Map<string, LoggedRun[]>();
  for (const line of lines) {
    const [eventId, pid, at] = line.split(' ');
    runs.set(eventId!, [...(runs.get(eventId!) ?? []), { pid: Number(pid), at: Number(at) }]);
  }
  return runs;
}

/**
 * The verdict of a SIGKILL run: every event ran, and a second run only where the crash window
 * explains it (`recorded` holds `eventId pid` for each completion a worker saw recorded). A handful
 * of re-runs a kill at most (the window is one store round trip wide), and at least three kills, or
 * the run proved nothing. Returns the crash-window re-runs, for the test's summary line.
 */
export function expectEveryEventHandledOnce(run: {
  readonly eventIds: readonly string[];
  readonly runs: ReadonlyMap<string, readonly LoggedRun[]>;
  readonly kills: readonly Kill[];
  readonly recorded: ReadonlySet<string>;
}): readonly string[] {
  const missing = run.eventIds.filter((id) => !run.runs.has(id));
  expect(missing).toEqual([]);
  expect(run.runs.size).toBe(run.eventIds.length);
  const { crashWindow, unexplained } = judgeSecondRuns(run.runs, run.kills, run.recorded);
  expect(unexplained).toEqual([]);
  expect(crashWindow.length).toBeLessThan(run.kills.length * 5);
  expect(run.kills.length).toBeGreaterThanOrEqual(3);
  return crashWindow;
}

/**
 * How many times the workers noted a log message containing `fragment` (the notes map each message to
 * its count): the engine's own sign that kills hit events mid-run, such as `abandoned` or `deferred`.
 */
export function timesNoted(notes: Readonly<Record<string, string | number>>, fragment: string): number {
  return Number(Object.entries(notes).find(([message]) => message.includes(fragment))?.[1] ?? 0);
}

/**
 * The Redis a broker's SIGKILL run keeps its store and its log in, a server of its own: the door's
 * store client (fail-fast, as a door's should be) and a patient one that reads what the workers
 * logged (`test/support/redis-logged-worker.ts`).
 */
export class RunRedis {
  private constructor(
    readonly server: RedisServer,
    /** Reads the workers' log. */
    readonly log: Redis,
    /** The door's store client. */
    readonly storeClient: Redis,
  ) {}

  static async start(): Promise<RunRedis> {
    const server = await RedisServer.start();
    const storeClient = new Redis(server.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: 2_000,
    });
    storeClient.on('error', () => {});
    return new RunRedis(server, new Redis(server.url), storeClient);
  }

  get url(): string {
    return this.server.url;
  }

  /** How many distinct events the workers logged a run of under `logKey` (see handled-events.ts). */
  handledEvents(logKey: string): Promise<number> {
    return handledEvents(this.log, logKey);
  }

  /** What the workers logged under `logKey`: the runs by event, the recorded completions, the notes. */
  async logged(logKey: string) {
    return {
      notes: await this.log.hgetall(`${logKey}:notes`),
      runs: runsByEvent(await this.log.lrange(logKey, 0, -1)),
      recorded: new Set(await this.log.lrange(`${logKey}:recorded`, 0, -1)),
    };
  }

  async stop(): Promise<void> {
    this.storeClient.disconnect();
    this.log.disconnect();
    await this.server.destroy();
  }
}

/**
 * How many distinct events the workers (`test/support/redis-logged-worker.ts`) logged a run of under
 * `logKey`: what a SIGKILL run waits to reach the number of events it sent.
 */
export function handledEvents(redis: Redis, logKey: string): Promise<number> {
  return redis.scard(handledEventsKey(logKey));
}

/** The service's retries of a delivery the receiver did not answer 2xx: up to 3 (SERVICE-SPEC.md). */
const SERVICE_RETRIES = 3;

/**
 * Deliver an event as the service does (`deliverOnce` sends it once): an answer other than 2xx is
 * delivered again, up to SERVICE_RETRIES times. The service waits 1, 5 and 15 minutes; here the
 * door's `Retry-After` (at most 5 s), to keep the run short. Each refusal is added to `refusals` as
 * `<status> <code>`.
 */
export async function deliverAsTheService(
  deliverOnce: () => Promise<WebhookResponse>,
  refusals: string[],
): Promise<WebhookResponse> {
  for (let retry = 0; ; retry++) {
    const answer = await deliverOnce();
    if ((answer.status >= 200 && answer.status < 300) || retry === SERVICE_RETRIES) return answer;
    const code = (JSON.parse(String(answer.body)) as { error?: { code?: string } }).error?.code;
    refusals.push(`${answer.status} ${code}`);
    const retryAfter = Number(answer.headers?.['retry-after'] ?? 1);
    await new Promise((resolve) => setTimeout(resolve, Math.min(5, retryAfter) * 1000));
  }
}
