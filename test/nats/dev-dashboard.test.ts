/**
 * The inbox panel of `service-webhooks dev` against a real NATS JetStream inbox on the machine's NATS:
 * the sandbox delivers to the inbox's door (node:http, in process), the worker dead-letters what
 * fails, and the dashboard's API shows the figures and the dead letters, streams them, and shows,
 * replays and removes them through the same admin the CLI's `inbox --url nats://…` uses. Modelled on
 * test/inbox/dev-dashboard.test.ts (BullMQ).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { createWebhooks, type DeadLetter, MemoryStore } from 'service-webhooks';
import { natsInbox, natsInboxAdmin, startNatsWorker } from 'service-webhooks/nats';
import { nodeHandler } from 'service-webhooks/node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { DevDelivery, InboxView } from '../../src/dashboard/api-types.js';
import { type DevServer, startDevServer } from '../../src/dashboard/dev-server.js';
import { devApi, openStream, settled, writeStandInPage } from '../dashboard/support.js';
import { RefusingCrm } from '../support/inbox-cli.js';
import { connectNats, deleteInbox, NATS_URL, SECRET, uniqueStream, waitUntil } from './support.js';

const TOKEN = 'inbox-panel-token';
const inboxStream = uniqueStream('dev-dashboard');
let connection: NatsConnection;
let door: Server;
let dev: DevServer;
let folder: string;
let closeAll: () => Promise<void>;
const crm = new RefusingCrm();
const { handled } = crm;

beforeAll(async () => {
  connection = await connectNats();
  const store = new MemoryStore();
  const receiver = createWebhooks({
    secret: SECRET,
    store,
    inbox: natsInbox({ connection, stream: inboxStream }),
  });
  receiver.onError(() => {});
  door = createServer(nodeHandler(receiver));
  await new Promise<void>((resolve) => door.listen(0, '127.0.0.1', resolve));
  const webhooks = createWebhooks({ secret: SECRET, store });
  webhooks.onError(() => {});
  webhooks.onAny(crm.handler);
  const worker = await startNatsWorker(webhooks, {
    connection,
    stream: inboxStream,
    attempts: 1,
    pollMs: 1_000,
    monitor: false,
  });
  const admin = natsInboxAdmin({ connection: NATS_URL, stream: inboxStream });
  folder = await mkdtemp(join(tmpdir(), 'dev-inbox-'));
  await writeStandInPage(folder);
  dev = await startDevServer({
    forward: `http://127.0.0.1:${(door.address() as AddressInfo).port}/`,
    secret: SECRET,
    port: 0,
    timeScale: 0.001,
    assetsFolder: folder,
    token: TOKEN,
    inbox: admin,
  });
  closeAll = async () => {
    await dev.close();
    await admin.close();
    await worker.close();
  };
});

afterAll(async () => {
  await closeAll?.();
  await new Promise((resolve) => door?.close(resolve));
  await deleteInbox(connection, inboxStream);
  await connection?.close();
  await rm(folder, { recursive: true, force: true });
});

test('figures and dead letters, live; show, replay and remove through the admin', async () => {
  const stream = await openStream(dev.url, TOKEN);
  try {
    const empty = await devApi<InboxView>(dev.url, TOKEN, 'GET', '/inbox');
    expect(empty.body).toMatchObject({ engine: 'nats', dead_letters: [], more: false });
    expect(empty.body.stats.deadLettered).toBe(0);

    const sent: DevDelivery[] = [];
    for (const type of ['user.created', 'payment.failed']) {
      const answer = await devApi<{ data: DevDelivery[] }>(dev.url, TOKEN, 'POST', '/send', { type });
      sent.push(answer.body.data[0]!);
    }
    // The door acknowledges once the inbox holds the event: the sender sees 200 at once.
    for (const delivery of sent) await stream.next(settled(delivery.id, 'succeeded'));

    const live = await stream.next(
      (event) =>
        event.type === 'inbox' && event.data.stats.deadLettered === 2 && event.data.dead_letters.length === 2,
    );
    const letters = (live.data as InboxView).dead_letters;
    expect(letters.map((letter) => letter.eventId).sort()).toEqual(
      sent.map((delivery) => delivery.event_id).sort(),
    );
    expect(letters[0]!.lastError).toContain('crm.example refused');

    const first = letters.find((letter) => letter.eventId === sent[0]!.event_id)!;
    const shown = await devApi<DeadLetter>(
      dev.url,
      TOKEN,
      'GET',
      `/inbox/dead-letters/${encodeURIComponent(first.jobId)}`,
    );
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({ eventId: first.eventId, eventType: 'user.created', attempts: 1 });
    expect(shown.body.stacktrace.join('\n')).toContain('crm.example refused');

    crm.failing = false;
    const replayed = await devApi(
      dev.url,
      TOKEN,
      'POST',
      `/inbox/dead-letters/${encodeURIComponent(first.jobId)}/replay`,
    );
    expect(replayed).toMatchObject({ status: 202, body: { eventId: first.eventId, replayOf: first.jobId } });
    await waitUntil('the replay to run', () => handled.includes(first.eventId), 10_000);

    const second = letters.find((letter) => letter.eventId === sent[1]!.event_id)!;
    const path = `/inbox/dead-letters/${encodeURIComponent(second.jobId)}`;
    expect((await devApi(dev.url, TOKEN, 'DELETE', path)).body).toEqual({ removed: true });
    expect((await devApi(dev.url, TOKEN, 'DELETE', path)).body).toEqual({ removed: false });
    expect(await devApi(dev.url, TOKEN, 'GET', path)).toMatchObject({
      status: 404,
      body: { error: { code: 'dead_letter_not_found' } },
    });
    const missingReplay = await devApi(dev.url, TOKEN, 'POST', `${path}/replay`);
    expect(missingReplay.status).toBe(404);

    const after = await devApi<InboxView>(dev.url, TOKEN, 'GET', '/inbox');
    expect(after.body.stats.deadLettered).toBe(0);
    expect(after.body.dead_letters).toEqual([]);
  } finally {
    stream.close();
  }
});
