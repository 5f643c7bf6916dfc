/**
 * Fan-out, end to end: the service delivers each event, with one event id, to every registration
 * subscribed to its type. One app serving two registrations with two receivers on ONE RedisStore must
 * run each receiver's handlers once per event: the dedup key is scoped to the receiver (by default
 * by its secret, or by an explicit `namespace`), so neither receiver drops the other's events as
 * duplicates, while each still deduplicates its own redeliveries.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Delivery } from '../../src/sandbox/index.js';
import {
  api,
  type Child,
  requireBuiltCli,
  runCli,
  startFanOutReceiverProcess,
  startSandboxProcess,
  waitFor,
} from './support.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
/** One prefix per run, so runs (and other tests on the same Redis) never see each other's events. */
const STORE_PREFIX = `sw-test-fan-out-${randomUUID()}:`;
const EVENTS = ['user.created', 'user.updated', 'project.created'];
/**
 * The receiver needs the registrations' secrets before it starts, and its port is known only once it
 * listens: registrations start on this address (no event is caused before they are pointed at the
 * receiver) and are moved to the receiver's routes with a PUT.
 */
const NOT_YET_SERVED = 'http://127.0.0.1:9/not-yet-served';

interface Registration {
  id: string;
  secret: string;
}

interface Seen {
  handled: { route: string; id: string; type: string }[];
  requests: Record<string, number>;
}

let sandbox: Child & { url: string };

beforeAll(async () => {
  requireBuiltCli();
  // 0.001: a 409 would be retried after 60 ms instead of 1 minute, so even the bug settles quickly.
  sandbox = await startSandboxProcess(['--allow-http', '--time-scale', '0.001', '--rate-limit', '10000']);
});

afterAll(async () => {
  await sandbox?.stop();
  // Leave nothing behind in the shared Redis.
  const redis = new Redis(REDIS_URL);
  try {
    const keys: string[] = [];
    for await (const batch of redis.scanStream({ match: `${STORE_PREFIX}*`, count: 1_000 })) {
      keys.push(...(batch as string[]));
    }
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
});

/** Register for EVENTS; without `secret` the sandbox generates one and shows it in the 201 answer. */
async function register(secret?: string): Promise<Registration> {
  const created = await api(sandbox.url, 'POST', '/webhooks', {
    url: NOT_YET_SERVED,
    events: EVENTS,
    ...(secret !== undefined && { secret }),
  });
  expect(created.status).toBe(201);
  const body = created.body as Registration;
  if (secret === undefined) expect(body.secret).toMatch(/^whsec_[0-9a-f]+$/);
  else expect(body.secret).toBe(secret);
  return { id: body.id, secret: body.secret };
}

async function pointAt(registration: Registration, url: string): Promise<void> {
  expect((await api(sandbox.url, 'PUT', `/webhooks/${registration.id}`, { url })).status).toBe(200);
}

async function deliveries(registration: Registration): Promise<Delivery[]> {
  const page = await api(sandbox.url, 'GET', `/sandbox/deliveries?webhook_id=${registration.id}&limit=100`);
  return (page.body as { data: Delivery[] }).data;
}

function settled(list: Delivery[], count: number): boolean {
  return list.length === count && list.every((delivery) => delivery.status !== 'pending');
}

async function seen(receiver: Child & { url: string }): Promise<Seen> {
  return (await (await fetch(`${receiver.url}/seen`)).json()) as Seen;
}

/** How many times each route's handler ran for each of `eventIds` (0 when never). */
function runsPerRoute(
  handled: Seen['handled'],
  eventIds: readonly string[],
): Record<string, Record<string, number>> {
  const runs: Record<string, Record<string, number>> = {};
  for (const route of ['a', 'b']) {
    runs[route] = Object.fromEntries(
      eventIds.map((id) => [id, handled.filter((entry) => entry.route === route && entry.id === id).length]),
    );
  }
  return runs;
}

/**
 * Two registrations for EVENTS, served by the fan-out receiver on `/a` and `/b`; `env` adds the
 * receiver's options (namespaces). Causes three events, waits until every delivery has settled and
 * checks the fan-out, then replays one handled event to each route. Registrations and receiver are
 * removed afterwards, so the next case's events go to its own registrations only.
 */
async function expectEachRouteHandlesEachEventOnce(
  a: Registration,
  b: Registration,
  env: Record<string, string> = {},
): Promise<void> {
  const receiver = await startFanOutReceiverProcess({
    SECRET_A: a.secret,
    SECRET_B: b.secret,
    STORE_PREFIX,
    REDIS_URL,
    ...env,
  });
  try {
    await pointAt(a, `${receiver.url}/a`);
    await pointAt(b, `${receiver.url}/b`);

    const created = await api(sandbox.url, 'POST', '/users', { name: 'Ada', email: 'ada@example.com' });
    expect(created.status).toBe(201);
    const userId = (created.body as { id: string }).id;
    expect((await api(sandbox.url, 'PUT', `/users/${userId}`, { email: 'ada@lovelace.dev' })).status).toBe(
      200,
    );
    expect((await api(sandbox.url, 'POST', '/projects', { name: 'Engine' })).status).toBe(201);

    const [listA, listB] = await Promise.all(
      [a, b].map((registration) =>
        waitFor(
          () => deliveries(registration),
          (list) => settled(list, EVENTS.length),
        ),
      ),
    );
    // The same three events (same ids) were fanned out to both registrations.
    const eventIds = listA!.map((delivery) => delivery.event_id).sort();
    expect(listB!.map((delivery) => delivery.event_id).sort()).toEqual(eventIds);
    expect(new Set(eventIds).size).toBe(EVENTS.length);

    // The bug: the second receiver found the first one's record, so its handler never ran.
    const { handled } = await seen(receiver);
    const once = Object.fromEntries(eventIds.map((id) => [id, 1]));
    expect(runsPerRoute(handled, eventIds)).toEqual({ a: once, b: once });

    // Each delivery was handled on its first attempt: neither 409 (in progress) nor a duplicate 200.
    const firstAttempts = (list: Delivery[]) =>
      list.map((delivery) => ({
        type: delivery.event_type,
        status: delivery.status,
        attempts: delivery.attempts.length,
        first: delivery.attempts[0]?.status,
        answer: delivery.attempts[0]?.response_body,
      }));
    const clean = (list: Delivery[]) =>
      list.map((delivery) => ({
        type: delivery.event_type,
        status: 'succeeded',
        attempts: 1,
        first: 200,
        answer: '{"received":true}',
      }));
    expect({ a: firstAttempts(listA!), b: firstAttempts(listB!) }).toEqual({
      a: clean(listA!),
      b: clean(listB!),
    });

    // The scope did not turn dedup off: redelivering a handled event is a duplicate on each route.
    const replayed = listA!.find((delivery) => delivery.event_type === 'user.created')!.event;
    const directory = await mkdtemp(join(tmpdir(), 'fan-out-replay-'));
    try {
      const file = join(directory, 'event.jsonl');
      await writeFile(file, `${JSON.stringify(replayed)}\n`);
      for (const [route, registration] of [
        ['a', a],
        ['b', b],
      ] as const) {
        const result = await runCli([
          'replay',
          file,
          '--url',
          `${receiver.url}/${route}`,
          '--secret',
          registration.secret,
        ]);
        expect(result.code, result.stdout + result.stderr).toBe(0);
        expect(result.stdout.match(/x-webhook-duplicate: true/g)).toHaveLength(1);
      }
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
    expect(runsPerRoute((await seen(receiver)).handled, eventIds)).toEqual({ a: once, b: once });
  } finally {
    await Promise.all(
      [a, b].map((registration) => api(sandbox.url, 'DELETE', `/webhooks/${registration.id}`)),
    );
    await receiver.stop();
  }
}

describe('one event fanned out to two registrations, two receivers on one RedisStore', () => {
  it('each generated secret scopes its receiver: both handlers run once per event, no option needed', async () => {
    const a = await register();
    const b = await register();
    expect(a.secret).not.toBe(b.secret);
    await expectEachRouteHandlesEachEventOnce(a, b);
  });

  it('registrations sharing one secret are told apart by a namespace each', async () => {
    const secret = `whsec_shared_${randomUUID().replaceAll('-', '')}`;
    const a = await register(secret);
    const b = await register(secret);
    await expectEachRouteHandlesEachEventOnce(a, b, {
      NAMESPACE_A: 'registration-a',
      NAMESPACE_B: 'registration-b',
    });
  });
});
