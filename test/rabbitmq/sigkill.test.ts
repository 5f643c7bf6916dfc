/**
 * 2,000 events through a RabbitMQ door while three worker processes (`startRabbitMQWorker`) run them,
 * one of them killed with SIGKILL every second (and replaced). Every event's handler completes, and
 * exactly once, but for the one window no receiver can close: a worker killed after its handler's
 * last side effect and before the store recorded the completion. That event runs again elsewhere (the
 * broker hands a dead connection's unacknowledged deliveries out again at once, and the dead run's
 * claim ends with its lease); the test accepts a second run only when it proves to be that (the first
 * run's process was killed after the run, and never recorded the completion), and fails on any other.
 * Nothing is dead-lettered. 2,000 events and a kill a second (at most ten) put kills among runs in flight
 * and in the prefetch, which is what the run proves; more events would only make it longer.
 */
import { fileURLToPath } from 'node:url';
import type { ChannelModel } from 'amqplib';
import { createWebhooks } from 'service-webhooks';
import { rabbitMQInbox, rabbitMQInboxStats } from 'service-webhooks/rabbitmq';
import { RedisStore } from 'service-webhooks/redis';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { inParallel } from '../support/in-parallel.js';
import { ROOT } from '../support/paths.js';
import { type SpawnedProcess, startProcess } from '../support/process.js';
import {
  deliverAsTheService,
  expectEveryEventHandledOnce,
  killOneEvery,
  RunRedis,
  timesNoted,
} from '../support/sigkill-run.js';
import { waitUntil } from '../support/wait-until.js';
import { AMQP_URL, deleteQueues, openConnection, uniqueQueue } from './support.js';

const SECRET = 'whsec_rabbitmq_sigkill';
const EVENTS = 2_000;
const KILL_EVERY_MS = 1_000;
// Long enough that a worker's event loop, lagging on a loaded 2-core machine, still finishes in time.
const LEASE_SECONDS = 6;
const WORKER = fileURLToPath(new URL('./fixtures/worker.ts', import.meta.url));

let connection: ChannelModel;
let redis: RunRedis;
const queue = uniqueQueue('sigkill');
const workers = new Set<SpawnedProcess & { pid: number }>();

beforeAll(async () => {
  connection = await openConnection();
  redis = await RunRedis.start();
});

afterAll(async () => {
  await Promise.all([...workers].map((worker) => worker.stop()));
  if (connection) {
    await deleteQueues(connection, queue).catch(() => {});
    await connection.close();
  }
  await redis?.stop();
});

test(`${EVENTS} events, 3 RabbitMQ workers, one SIGKILLed every ${KILL_EVERY_MS / 1000} s: every handler completes once`, async () => {
  const storePrefix = `${queue}:store:`;
  const logKey = `${queue}:runs`;
  const inbox = rabbitMQInbox({ url: AMQP_URL, queue });
  const door = createWebhooks({
    secret: SECRET,
    store: new RedisStore({ client: redis.storeClient, prefix: storePrefix }),
    inbox,
    leaseSeconds: LEASE_SECONDS,
    handlerTimeoutMs: 2_000,
  });
  door.onError(() => {});
  const env = {
    SECRET,
    REDIS_URL: redis.url,
    AMQP_URL,
    QUEUE: queue,
    STORE_PREFIX: storePrefix,
    LOG_KEY: logKey,
    LEASE_SECONDS: String(LEASE_SECONDS),
    CONCURRENCY: '25',
    MAX_CRASHES: '1000',
    HANDLER_DELAY_MS: '300',
  };
  const startWorker = async () => {
    const started = await startProcess(process.execPath, ['--import', 'tsx', WORKER], {
      name: 'rabbitmq worker',
      cwd: ROOT,
      env,
      ready: /"ready":true/,
      timeoutMs: 30_000,
    });
    return Object.assign(started, { pid: started.child.pid! });
  };
  const starts = await Promise.allSettled([startWorker(), startWorker(), startWorker()]);
  for (const start of starts) if (start.status === 'fulfilled') workers.add(start.value);
  const failed = starts.find((start) => start.status === 'rejected');
  if (failed) throw failed.reason;

  const chaos = killOneEvery(KILL_EVERY_MS, workers, startWorker);

  const events = Array.from({ length: EVENTS }, (_, n) =>
    createTestEvent('user.created', { id: `evt_rabbitmq_kill_${String(n).padStart(5, '0')}` }),
  );
  const started = performance.now();
  // The door answers 503 (with Retry-After) when its store or the broker misses a deadline, as three
  // workers, a door and 32 senders on a loaded 2-core machine can make them: nothing was acknowledged,
  // and the service delivers the event again. The sender here does as the service does.
  const refusals: string[] = [];
  const answers = await inParallel(events, 32, (event) =>
    deliverAsTheService(() => deliver(door, event, { secret: SECRET }), refusals),
  );
  const sentMs = performance.now() - started;
  const refused = answers.filter((answer) => answer.status !== 200);
  expect(refused.slice(0, 3), `${refused.length} deliveries were not acknowledged`).toEqual([]);
  expect(refusals.length, `refusals: ${refusals.join(', ')}`).toBeLessThan(EVENTS * 0.03);

  const channel = await connection.createChannel();
  try {
    await waitUntil(
      'every event to be handled and the queue to drain',
      async () =>
        (await redis.handledEvents(logKey)) >= EVENTS &&
        (await rabbitMQInboxStats(channel, queue)).depth === 0,
      75_000,
    );
  } finally {
    await chaos.stop();
    await Promise.all([...workers].map((worker) => worker.stop()));
    workers.clear();
    await inbox.close();
  }
  const drainedMs = performance.now() - started;

  const { notes, runs, recorded } = await redis.logged(logKey);
  // A second run is the crash window when the first run's process was killed after that run and
  // before the store recorded its completion. Judged by what was recorded, not by timing.
  const crashWindow = expectEveryEventHandledOnce({
    eventIds: events.map((event) => event.id),
    runs,
    kills: chaos.kills,
    recorded,
  });
  const stats = await rabbitMQInboxStats(channel, queue);
  await channel.close();
  expect(stats.deadLettered).toBe(0);
  // The kills hit events mid-run: the broker handed them out again, and they met the dead runs' claims.
  expect(timesNoted(notes, 'abandoned')).toBeGreaterThan(0);
  console.log(
    `rabbitmq sigkill: ${EVENTS} events acknowledged in ${Math.round(sentMs)} ms (${refusals.length} refused first), all handled in ${Math.round(drainedMs)} ms; ${chaos.kills.length} workers killed; ${crashWindow.length} re-run after a kill between handler and completion; ${JSON.stringify(notes)}`,
  );
}, 150_000);
