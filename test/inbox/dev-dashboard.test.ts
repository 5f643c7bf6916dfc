/**
 * The inbox panel of `service-webhooks dev` against a real BullMQ inbox on a real Redis: the sandbox
 * delivers to the inbox's door, the worker dead-letters what fails, and the dashboard's API shows the
 * figures and the dead letters, streams them, and shows, replays and removes them through the same
 * admin the CLI's `inbox` command uses.
 */
import { inboxAdmin } from 'service-webhooks/bullmq';
import { afterAll, beforeAll, test } from 'vitest';
import type { DevServer } from '../../src/dashboard/dev-server.js';
import { startTestDevServer } from '../dashboard/support.js';
import { RefusingCrm } from '../support/inbox-cli.js';
import { expectInboxPanelRoundTrip } from '../support/inbox-panel.js';
import { RedisServer } from '../support/redis-servers.js';
import { type Door, SECRET, startDoor, startOneAttemptWorker, uniqueName, waitUntil } from './support.js';

const TOKEN = 'inbox-panel-token';
let redis: RedisServer;
let door: Door;
let dev: DevServer;
let closeAll: () => Promise<void>;
const crm = new RefusingCrm();

beforeAll(async () => {
  redis = await RedisServer.start();
  const queueName = uniqueName('dev-dashboard');
  const storePrefix = `${queueName}:store:`;
  door = await startDoor({ redisUrl: redis.url, queueName, storePrefix });
  const worker = await startOneAttemptWorker({
    redisUrl: redis.url,
    queueName,
    storePrefix,
    handler: crm.handler,
  });
  const admin = inboxAdmin({ connection: redis.url, queueName });
  dev = await startTestDevServer('dev-inbox', {
    forward: door.url,
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
  await door?.close();
  await redis?.destroy();
});

test('figures and dead letters, live; show, replay and remove through the admin', () =>
  expectInboxPanelRoundTrip({ devUrl: dev.url, token: TOKEN, engine: 'bullmq', crm, waitUntil }));
