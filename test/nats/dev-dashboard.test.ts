/**
 * The inbox panel of `service-webhooks dev` against a real NATS JetStream inbox on the machine's NATS:
 * the sandbox delivers to the inbox's door (node:http, in process), the worker dead-letters what
 * fails, and the dashboard's API shows the figures and the dead letters, streams them, and shows,
 * replays and removes them through the same admin the CLI's `inbox --url nats://…` uses. Modelled on
 * test/inbox/dev-dashboard.test.ts (BullMQ).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { NatsConnection } from '@nats-io/transport-node';
import { createWebhooks, MemoryStore } from 'service-webhooks';
import { natsInbox, natsInboxAdmin, startNatsWorker } from 'service-webhooks/nats';
import { nodeHandler } from 'service-webhooks/node';
import { afterAll, beforeAll, test } from 'vitest';
import type { DevServer } from '../../src/dashboard/dev-server.js';
import { startTestDevServer } from '../dashboard/support.js';
import { RefusingCrm } from '../support/inbox-cli.js';
import { expectInboxPanelRoundTrip } from '../support/inbox-panel.js';
import { connectNats, deleteInbox, NATS_URL, SECRET, uniqueStream } from './support.js';

const TOKEN = 'inbox-panel-token';
const inboxStream = uniqueStream('dev-dashboard');
let connection: NatsConnection;
let door: Server;
let dev: DevServer;
let closeAll: () => Promise<void>;
const crm = new RefusingCrm();

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
  dev = await startTestDevServer('dev-inbox', {
    forward: `http://127.0.0.1:${(door.address() as AddressInfo).port}/`,
    secret: SECRET,
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
});

test('figures and dead letters, live; show, replay and remove through the admin', () =>
  expectInboxPanelRoundTrip({ devUrl: dev.url, token: TOKEN, engine: 'nats', crm }));
