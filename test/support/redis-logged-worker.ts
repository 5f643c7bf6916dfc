/**
 * The shared half of the inbox worker processes the SIGKILL and multi-process tests start (run with
 * `node --import tsx`): a receiver on a RedisStore whose handler appends `<eventId> <pid> <Date.now()>`
 * to the Redis list LOG_KEY (and the event id to the set {@link handledEventsKey}) in one transaction,
 * as its last step, so the test sees every completed run of
 * every process and which process made it when; what the inbox logs counted in `<LOG_KEY>:notes` (one
 * field per message), so the test sees deferrals and recoveries; and the `{"ready":true,"pid":N}` line
 * and SIGTERM close the tests wait for. Each engine's fixture adds only its worker.
 */
import { Redis } from 'ioredis';
import { createWebhooks, type Webhooks, type WebhooksOptions } from 'service-webhooks';
import { RedisStore } from 'service-webhooks/redis';
import { handledEventsKey } from './handled-events.js';

/** An environment variable the test set; a fixture started without it fails at once. */
export const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined) throw new Error(`worker: ${name} is not set`);
  return value;
};

/** A numeric environment variable, `fallback` when the test left it out. */
export const number = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);

const url = env('REDIS_URL');
const storeClient = new Redis(url, {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 1,
  commandTimeout: 2_000,
});
storeClient.on('error', () => {});
// The handler's own work uses a separate, patient connection, as an application's would.
const work = new Redis(url);
work.on('error', () => {});
const logKey = env('LOG_KEY');
const maxDelayMs = number('HANDLER_DELAY_MS', 0);

/** The Redis URL the test gave (the store's, and BullMQ's when it is the engine). */
export const redisUrl = url;

/** The lease the test asked for (LEASE_SECONDS), 45 s by default. */
export const leaseSeconds = number('LEASE_SECONDS', 45);

/** Counts each inbox log line into `<LOG_KEY>:notes`: give it as the worker's logger. */
export const logger = (() => {
  const note = (_record: unknown, message?: string) => {
    if (message?.startsWith('webhook inbox:'))
      void work.hincrby(`${logKey}:notes`, message, 1).catch(() => {});
  };
  return { info: note, warn: note, error: note };
})();

/**
 * The receiver, logging each run to LOG_KEY; `options` overrides its settings (by default the lease
 * and a handler budget one second shorter).
 */
export function loggedReceiver(options: Partial<WebhooksOptions> = {}): Webhooks {
  const webhooks = createWebhooks({
    secret: env('SECRET'),
    store: new RedisStore({ client: storeClient, prefix: env('STORE_PREFIX') }),
    leaseSeconds,
    handlerTimeoutMs: leaseSeconds * 1000 - 1_000,
    ...options,
  });
  webhooks.onError(() => {});
  webhooks.onAny(async (event) => {
    if (maxDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, Math.random() * maxDelayMs));
    // One transaction: the run's line, and its event among those handled (handledEventsKey), which
    // is what a test waits on (a count of lines also counts the crash window's second runs).
    await work
      .multi()
      .rpush(logKey, `${event.id} ${process.pid} ${Date.now()}`)
      .sadd(handledEventsKey(logKey), event.id)
      .exec();
  });
  return webhooks;
}

/** Appends `<eventId> <pid>` to `<LOG_KEY>:recorded`: the store recorded this run's completion. */
export function logRecorded(eventId: string): Promise<unknown> {
  return work.rpush(`${logKey}:recorded`, `${eventId} ${process.pid}`).catch(() => {});
}

/**
 * The receiver as the worker sees it, but for process(): a run that resolved had its completion
 * recorded by the store, and says so. Other members keep the receiver as their `this`.
 */
export function observeRecorded(webhooks: Webhooks): Webhooks {
  return new Proxy(webhooks, {
    get(target, property) {
      if (property === 'process') {
        return async (...args: Parameters<Webhooks['process']>) => {
          const result = await target.process(...args);
          await logRecorded(args[0].event.id);
          return result;
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * Once the store's client is connected, print `{"ready":true,"pid":N}` (call it once the worker
 * takes events); on SIGTERM close the worker, then the clients (`closeMore`: the fixture's own), and
 * exit.
 */
export async function announceReady(
  worker: { close(): Promise<void> },
  closeMore: () => void = () => {},
): Promise<void> {
  if (storeClient.status !== 'ready') await new Promise((resolve) => storeClient.once('ready', resolve));
  process.stdout.write(`${JSON.stringify({ ready: true, pid: process.pid })}\n`);
  process.once('SIGTERM', () => {
    void worker.close().finally(() => {
      storeClient.disconnect();
      work.disconnect();
      closeMore();
      process.exit(0);
    });
  });
}
