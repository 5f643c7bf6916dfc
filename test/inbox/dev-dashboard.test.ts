/**
 * The inbox panel of `service-webhooks dev` against a real BullMQ inbox on a real Redis: the sandbox
 * delivers to the inbox's door, the worker dead-letters what fails, and the dashboard's API shows the
 * figures and the dead letters, streams them, and shows, replays and removes them through the same
 * admin the CLI's `inbox` command uses.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DeadLetter } from 'service-webhooks';
import { inboxAdmin } from 'service-webhooks/bullmq';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { DevDelivery, InboxView } from '../../src/dashboard/api-types.js';
import { type DevServer, startDevServer } from '../../src/dashboard/dev-server.js';
import { devApi, openStream, settled, writeStandInPage } from '../dashboard/support.js';
import { RefusingCrm } from '../support/inbox-cli.js';
import { RedisServer } from '../support/redis-servers.js';
import { type Door, SECRET, startDoor, startOneAttemptWorker, uniqueName, waitUntil } from './support.js';

const TOKEN = 'inbox-panel-token';
let redis: RedisServer;
let door: Door;
let dev: DevServer;
let folder: string;
let closeAll: () => Promise<void>;
const crm = new RefusingCrm();
const { handled } = crm;

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
  folder = await mkdtemp(join(tmpdir(), 'dev-inbox-'));
  await writeStandInPage(folder);
  dev = await startDevServer({
    forward: door.url,
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
  await door?.close();
  await redis?.destroy();
  await rm(folder, { recursive: true, force: true });
});

test('figures and dead letters, live; show, replay and remove through the admin', async () => {
  const stream = await openStream(dev.url, TOKEN);
  try {
    const empty = await devApi<InboxView>(dev.url, TOKEN, 'GET', '/inbox');
    expect(empty.body).toMatchObject({ engine: 'bullmq', dead_letters: [], more: false });
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
