/**
 * The NATS server restarted mid-run (a nats-server of the test's own, on a free port with its store
 * in a temporary directory: the machine's is shared and is never restarted). A door takes 300 events
 * from senders that deliver again after anything but 2xx, as the service does, while two workers run
 * them; the server is stopped and started again while events arrive and run. Nothing is lost (every
 * event answered 200 is handled), nothing runs twice (no worker crashed, so there is no crash window),
 * nothing is dead-lettered, and the stream drains. A few hundred events are enough: the restart meets
 * events at every stage (being published, waiting, running, being acknowledged).
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { createWebhooks, MemoryStore } from 'service-webhooks';
import {
  type NatsWorker,
  natsInbox,
  natsInboxNames,
  natsInboxStats,
  startNatsWorker,
} from 'service-webhooks/nats';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { waitUntil } from '../support/wait-until.js';
import { connectNats, OwnNatsServer, SECRET, uniqueStream } from './support.js';

const EVENTS = 300;

let server: OwnNatsServer;
let connection: NatsConnection;
const workers: NatsWorker[] = [];

beforeAll(async () => {
  server = await OwnNatsServer.start();
  connection = await connectNats(server.url);
});

afterAll(async () => {
  for (const worker of workers) await worker.close(true).catch(() => {});
  await connection?.close().catch(() => {});
  await server?.destroy();
});

test(`${EVENTS} events, two workers, the server restarted mid-run: none lost, none run twice`, async () => {
  const stream = uniqueStream('restart');
  const door = createWebhooks({
    secret: SECRET,
    store: new MemoryStore(),
    inbox: natsInbox({ connection, stream }),
  });
  door.onError(() => {});
  const runs = new Map<string, number>();
  const deadLetters: unknown[] = [];
  // One receiver, two workers (each its own connection): as two worker processes on one store.
  const webhooks = createWebhooks({
    secret: SECRET,
    store: new MemoryStore(),
    leaseSeconds: 10,
    handlerTimeoutMs: 5_000,
  });
  webhooks.onError((error) => {
    if (error.code === 'event_dead_lettered') deadLetters.push(error);
  });
  webhooks.onAny(async (event) => {
    await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
    runs.set(event.id, (runs.get(event.id) ?? 0) + 1);
  });
  for (let n = 0; n < 2; n++) {
    workers.push(
      await startNatsWorker(webhooks, {
        connection: server.url,
        stream,
        concurrency: 10,
        ackWaitMs: 3_000,
        pollMs: 1_000,
        backoff: [200],
        monitor: false,
      }),
    );
  }

  const events = Array.from({ length: EVENTS }, (_, n) =>
    createTestEvent('user.created', { id: `evt_nats_restart_${String(n).padStart(4, '0')}` }),
  );
  let acknowledged = 0;
  let refusals = 0;
  const send = async (event: (typeof events)[number]) => {
    // The sender delivers again after anything but 2xx (the service's retries, here quickened).
    for (let tries = 0; tries < 120; tries++) {
      const answer = await deliver(door, event, { secret: SECRET });
      if (answer.status === 200) {
        acknowledged++;
        return;
      }
      refusals++;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    throw new Error(`${event.id} was never acknowledged`);
  };
  let next = 0;
  const senders = Array.from({ length: 8 }, async () => {
    while (next < events.length) {
      await send(events[next++]!);
      // Spread over a few seconds, so that the restart falls in the middle.
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
  });
  await waitUntil('a third of the events acknowledged', async () => acknowledged >= EVENTS / 3, 30_000);
  const handledBefore = runs.size;
  await server.restart(500);
  await Promise.all(senders);
  expect(acknowledged).toBe(EVENTS);

  const names = natsInboxNames(stream);
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const jsm = await jetstreamManager(connection);
  await waitUntil(
    'every event handled and the stream drained',
    // A read while the client reconnects fails; the next one is asked 50 ms later.
    async () =>
      runs.size === EVENTS && (await natsInboxStats(jsm, names).catch(() => undefined))?.depth === 0,
    60_000,
  );
  const twice = [...runs].filter(([, count]) => count !== 1);
  expect(twice).toEqual([]);
  expect(deadLetters).toEqual([]);
  expect((await natsInboxStats(jsm, names)).deadLettered).toBe(0);
  // The restart met the run in the middle: events were handled before it, and after.
  expect(handledBefore).toBeGreaterThan(0);
  expect(handledBefore).toBeLessThan(EVENTS);
  console.log(`nats restart: ${EVENTS} events, ${refusals} refusals answered 503 around the restart`);
}, 120_000);
