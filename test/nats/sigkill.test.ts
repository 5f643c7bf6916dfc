/**
 * 2,000 events through a NATS JetStream door while three worker processes (`startNatsWorker`) run
 * them, one of them killed with SIGKILL every second (and replaced): a dozen kills meet events at every
 * stage (pulled, running, recorded, acknowledged), which is what the scale has to prove. Every event's handler completes, and
 * exactly once, but for the one window no receiver can close: a worker killed after its handler's
 * last side effect and before the store recorded the completion. That event runs again elsewhere (its
 * message comes back after its AckWait, and the dead run's claim ends with its lease); the test
 * accepts a second run only when it proves to be that (the first run's process was killed after the
 * run, and never recorded the completion), and fails on any other. Modelled on test/inbox/sigkill.test.ts.
 */
import { fileURLToPath } from 'node:url';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { createWebhooks } from 'service-webhooks';
import { natsInbox, natsInboxNames, natsInboxStats } from 'service-webhooks/nats';
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
import { connectNats, deleteInbox, NATS_URL, SECRET, uniqueStream } from './support.js';

const EVENTS = 2_000;
const KILL_EVERY_MS = 1_000;
// Long enough that a worker's event loop, lagging on a loaded 2-core machine, still heartbeats in time.
const LEASE_SECONDS = 6;
// A dead worker's events are handed out again after this (renewed every third of it while they run).
const ACK_WAIT_MS = 4_000;
const WORKER = fileURLToPath(new URL('./fixtures/worker.ts', import.meta.url));

let connection: NatsConnection;
let stream: string | undefined;
let redis: RunRedis;
const workers = new Set<SpawnedProcess & { pid: number }>();

beforeAll(async () => {
  connection = await connectNats();
  redis = await RunRedis.start();
});

afterAll(async () => {
  await Promise.all([...workers].map((worker) => worker.stop()));
  if (stream) await deleteInbox(connection, stream);
  await redis?.stop();
  await connection?.close();
});

test(`${EVENTS} events, 3 NATS workers, one SIGKILLed every ${KILL_EVERY_MS / 1000} s: every handler completes once`, async () => {
  const name = uniqueStream('sigkill');
  stream = name;
  const names = natsInboxNames(stream);
  const jsm = await jetstreamManager(connection);
  const storePrefix = `${name}:store:`;
  const logKey = `${name}:runs`;
  const door = createWebhooks({
    secret: SECRET,
    store: new RedisStore({ client: redis.storeClient, prefix: storePrefix }),
    inbox: natsInbox({ connection, stream }),
    leaseSeconds: LEASE_SECONDS,
    handlerTimeoutMs: 2_000,
  });
  door.onError(() => {});
  const env = {
    SECRET,
    REDIS_URL: redis.url,
    NATS_URL,
    STREAM: stream,
    STORE_PREFIX: storePrefix,
    LOG_KEY: logKey,
    LEASE_SECONDS: String(LEASE_SECONDS),
    ACK_WAIT_MS: String(ACK_WAIT_MS),
    CONCURRENCY: '25',
    HANDLER_DELAY_MS: '100',
  };
  const startWorker = async () => {
    const started = await startProcess(process.execPath, ['--import', 'tsx', WORKER], {
      name: 'nats worker',
      cwd: ROOT,
      env,
      ready: /"ready":true/,
      timeoutMs: 30_000,
    });
    return Object.assign(started, { pid: started.child.pid! });
  };
  for (const worker of await Promise.all([startWorker(), startWorker(), startWorker()])) workers.add(worker);

  const chaos = killOneEvery(KILL_EVERY_MS, workers, startWorker);

  const events = Array.from({ length: EVENTS }, (_, n) =>
    createTestEvent('user.created', { id: `evt_nats_kill_${String(n).padStart(5, '0')}` }),
  );
  const started = performance.now();
  // The door answers 503 (with Retry-After) when its store or NATS misses its deadline, as three
  // workers, a door and 32 senders on a loaded 2-core machine can make them: nothing was acknowledged
  // and the service delivers the event again. The sender here does as the service does.
  const refusals: string[] = [];
  const answers = await inParallel(events, 32, (event) =>
    deliverAsTheService(() => deliver(door, event, { secret: SECRET }), refusals),
  );
  const sentMs = performance.now() - started;
  const refused = answers.filter((answer) => answer.status !== 200);
  expect(refused.slice(0, 3), `${refused.length} deliveries were not acknowledged`).toEqual([]);
  // A door that refuses often is broken, however the retries end: a few in a hundred at most.
  expect(refusals.length, `refusals: ${refusals.join(', ')}`).toBeLessThan(EVENTS * 0.03);

  try {
    await waitUntil(
      'every event to be handled and the queue to drain',
      async () => {
        if ((await redis.handledEvents(logKey)) < EVENTS) return false;
        const stats = await natsInboxStats(jsm, names);
        return stats.depth === 0;
      },
      75_000,
    );
  } finally {
    await chaos.stop();
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
  const stats = await natsInboxStats(jsm, names);
  expect(stats.deadLettered).toBe(0);
  // The kills hit events mid-run: their messages came back and met the dead runs' claims.
  expect(timesNoted(notes, 'deferred')).toBeGreaterThan(0);
  console.log(
    `nats sigkill: ${EVENTS} events acknowledged in ${Math.round(sentMs)} ms (${refusals.length} refused first: ${[...new Set(refusals)].join(', ') || 'none'}), all handled in ${Math.round(drainedMs)} ms; ${chaos.kills.length} workers killed; ${crashWindow.length} re-run after a kill between handler and completion; ${JSON.stringify(notes)}`,
  );
}, 150_000);
