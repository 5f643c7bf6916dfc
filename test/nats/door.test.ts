/**
 * The door on NATS JetStream: answered 200 only after the stream's publish acknowledgement, with the
 * entry in the stream; a second write of one event inside the duplicate window adds nothing (the
 * PubAck says duplicate, the stream holds one message); no acknowledgement in time (a server that
 * hangs, SIGSTOP on a nats-server of the test's own) is 503 `inbox_unavailable` within the deadline.
 */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { createWebhooks, MemoryStore } from 'service-webhooks';
import { doorMessageId, natsInbox, natsInboxNames } from 'service-webhooks/nats';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { connectNats, deleteInbox, OwnNatsServer, SECRET, uniqueStream } from './support.js';

let connection: NatsConnection;
const streams: string[] = [];

beforeAll(async () => {
  connection = await connectNats();
});

afterAll(async () => {
  for (const stream of streams) await deleteInbox(connection, stream);
  await connection?.close();
});

function door(stream: string, on: NatsConnection = connection, publishTimeoutMs?: number) {
  const errors: { code: string }[] = [];
  const webhooks = createWebhooks({
    secret: SECRET,
    store: new MemoryStore(),
    inbox: natsInbox({ connection: on, stream, ...(publishTimeoutMs ? { publishTimeoutMs } : {}) }),
  });
  webhooks.onError((error) => {
    errors.push(error);
  });
  return { webhooks, errors };
}

/** Deliver new events until one is answered 200, at most `tries` times, 250 ms apart. */
async function acceptedWithin(webhooks: ReturnType<typeof door>['webhooks'], tries: number): Promise<void> {
  let status = 0;
  for (let n = 0; n < tries && status !== 200; n++) {
    status = (await deliver(webhooks, createTestEvent('user.created'), { secret: SECRET })).status;
    if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 250));
  }
  expect(status).toBe(200);
}

test('200 once the stream stored the entry: the message is the entry, its Nats-Msg-Id the door id', async () => {
  const stream = uniqueStream('door');
  streams.push(stream);
  const names = natsInboxNames(stream);
  const { webhooks } = door(stream);
  const event = createTestEvent('user.created');
  const answer = await deliver(webhooks, event, { secret: SECRET });
  expect(answer.status).toBe(200);
  const jsm = await jetstreamManager(connection);
  const info = await jsm.streams.info(stream);
  expect(info.state.messages).toBe(1);
  expect(info.config.storage).toBe('file');
  const stored = await jsm.streams.getMessage(stream, { seq: info.state.first_seq });
  expect(stored?.subject).toBe(names.subject);
  expect(stored?.header.get('Nats-Msg-Id')).toMatch(/^[A-Za-z0-9_-]{43}$/);
  const entry = stored!.json<{ event: { id: string }; seal: string }>();
  expect(entry.event.id).toBe(event.id);
  expect(typeof entry.seal).toBe('string');
  // A second door with a store of its own (so the store does not deduplicate): the same event is
  // answered 200 and JetStream stores nothing more.
  const other = door(stream);
  expect((await deliver(other.webhooks, event, { secret: SECRET })).status).toBe(200);
  expect((await jsm.streams.info(stream)).state.messages).toBe(1);
});

test('a second write of one key inside the duplicate window: the PubAck says duplicate, one message', async () => {
  const stream = uniqueStream('dedup');
  streams.push(stream);
  const names = natsInboxNames(stream);
  const inbox = natsInbox({ connection, stream });
  const event = createTestEvent('user.created');
  const entry = { event, receivedAt: Date.now(), secretIndex: 0 } as never;
  await inbox.enqueue(entry, `key:${event.id}`);
  await inbox.enqueue(entry, `key:${event.id}`);
  // What JetStream answered the door: the same publish once more, as the door makes it.
  const again = await jetstream(connection).publish(names.subject, '{}', {
    msgID: doorMessageId(`key:${event.id}`),
  });
  expect(again.duplicate).toBe(true);
  const jsm = await jetstreamManager(connection);
  expect((await jsm.streams.info(stream)).state.messages).toBe(1);
  // Another key is another message.
  await inbox.enqueue(entry, `key:${event.id}:other`);
  expect((await jsm.streams.info(stream)).state.messages).toBe(2);
});

test('no acknowledgement in time (the server hangs): 503 inbox_unavailable within the deadline', async () => {
  const server = await OwnNatsServer.start();
  const own = await connectNats(server.url);
  try {
    const stream = uniqueStream('hung');
    const { webhooks, errors } = door(stream, own, 1_000);
    // The first event makes the streams: on a loaded machine that may take past the 1 s timeout, and
    // the sender delivers again, as the service does.
    await acceptedWithin(webhooks, 40);
    await server.pause();
    const started = Date.now();
    const answer = await deliver(webhooks, createTestEvent('user.created'), { secret: SECRET });
    const took = Date.now() - started;
    if (answer.status !== 503) {
      const state = (await server.answers()) ? 'answers' : 'is frozen';
      expect.fail(`answered ${answer.status} ${answer.body} after ${took} ms; the server ${state} now`);
    }
    expect(JSON.parse(answer.body).error.code).toBe('inbox_unavailable');
    expect(answer.headers['retry-after']).toBeDefined();
    // The receiver's storeTimeoutMs (2 s) bounds the write whatever the client's timeout; a margin.
    expect(took).toBeLessThan(5_000);
    expect(errors.some((error) => error.code === 'inbox_unavailable')).toBe(true);
    server.resume();
    // Back: accepted again.
    await acceptedWithin(webhooks, 40);
  } finally {
    server.resume();
    await own.close();
    await server.destroy();
  }
});
