/**
 * The sandbox and an Express receiver as two processes, talking HTTP as the service and a user's app
 * would: the sandbox's API causes events, its scheduler delivers and retries them, the receiver built
 * with service-webhooks/express verifies, deduplicates and runs handlers.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Delivery } from '../../src/sandbox/index.js';
import {
  api,
  type Child,
  requireBuiltCli,
  runCli,
  startReceiverProcess,
  startSandboxProcess,
  waitFor,
} from './support.js';

const SECRET = 'whsec_end_to_end';

interface Seen {
  seen: { route: string; id: string; type: string; data: { id: string; email?: string } }[];
  requests: Record<string, number>;
}

let sandbox: Child & { url: string };
let receiver: Child & { url: string };

beforeAll(async () => {
  requireBuiltCli();
  // 0.001: retries after 60, 300 and 900 ms instead of 1, 5 and 15 minutes.
  [sandbox, receiver] = await Promise.all([
    startSandboxProcess(['--allow-http', '--time-scale', '0.001', '--rate-limit', '10000']),
    startReceiverProcess(SECRET),
  ]);
});

afterAll(async () => {
  await Promise.all([sandbox?.stop(), receiver?.stop()]);
});

async function register(route: string, events: string[]): Promise<string> {
  const created = await api(sandbox.url, 'POST', '/webhooks', {
    url: `${receiver.url}${route}`,
    events,
    secret: SECRET,
  });
  expect(created.status).toBe(201);
  return (created.body as { id: string }).id;
}

async function seen(): Promise<Seen> {
  return (await (await fetch(`${receiver.url}/seen`)).json()) as Seen;
}

async function deliveries(webhookId: string): Promise<Delivery[]> {
  const page = await api(sandbox.url, 'GET', `/sandbox/deliveries?webhook_id=${webhookId}&limit=100`);
  return (page.body as { data: Delivery[] }).data;
}

function settled(list: Delivery[], count: number): boolean {
  return list.length === count && list.every((delivery) => delivery.status !== 'pending');
}

describe('sandbox → receiver, two processes', () => {
  it('delivers user.created, user.updated and user.deleted, each handled once', async () => {
    const webhookId = await register('/ok', ['user.created', 'user.updated', 'user.deleted']);
    const created = await api(sandbox.url, 'POST', '/users', { name: 'Ada', email: 'ada@example.com' });
    const userId = (created.body as { id: string }).id;
    expect((await api(sandbox.url, 'PUT', `/users/${userId}`, { email: 'ada@lovelace.dev' })).status).toBe(
      200,
    );
    expect((await api(sandbox.url, 'DELETE', `/users/${userId}`)).status).toBe(200);

    const list = await waitFor(
      () => deliveries(webhookId),
      (value) => settled(value, 3),
    );
    expect(list.map((delivery) => delivery.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    const handled = (await seen()).seen.filter((entry) => entry.route === 'ok' && entry.data.id === userId);
    expect(handled.map((entry) => entry.type).sort()).toEqual([
      'user.created',
      'user.deleted',
      'user.updated',
    ]);
    expect(handled.find((entry) => entry.type === 'user.updated')?.data.email).toBe('ada@lovelace.dev');
    expect(list.every((delivery) => delivery.attempts.length === 1)).toBe(true);
  });

  it('retries a receiver that fails the first attempt on the scaled schedule, then its handler runs', async () => {
    const webhookId = await register('/fail-once', ['project.created']);
    const created = await api(sandbox.url, 'POST', '/projects', { name: 'Engine' });
    const projectId = (created.body as { id: string }).id;

    const [delivery] = await waitFor(
      () => deliveries(webhookId),
      (value) => settled(value, 1),
    );
    expect(delivery?.status).toBe('succeeded');
    expect(delivery?.attempts.map((attempt) => attempt.status)).toEqual([500, 200]);
    const [first, second] = delivery?.attempts ?? [];
    // The first retry is due 60 s × 0.001 after the first attempt: never earlier.
    expect(Date.parse(second!.started_at) - Date.parse(first!.started_at)).toBeGreaterThanOrEqual(60);
    const handled = (await seen()).seen.filter((entry) => entry.route === 'fail-once');
    expect(handled).toEqual([
      expect.objectContaining({ type: 'project.created', data: expect.objectContaining({ id: projectId }) }),
    ]);
  });

  it('makes exactly 4 attempts to a receiver that never answers 2xx, then gives up', async () => {
    const webhookId = await register('/always-fail', ['payment.failed']);
    expect((await api(sandbox.url, 'POST', '/sandbox/payments', { outcome: 'failed' })).status).toBe(201);

    const [delivery] = await waitFor(
      () => deliveries(webhookId),
      (value) => settled(value, 1),
    );
    expect(delivery?.status).toBe('failed');
    expect(delivery?.attempts.map((attempt) => attempt.status)).toEqual([500, 500, 500, 500]);
    expect(delivery?.next_attempt_at).toBeNull();
    // Wait longer than the whole scaled schedule again: no fifth attempt may arrive.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await seen()).requests['/always-fail']).toBe(4);
    expect(sandbox.output()).toMatch(
      /attempt 4\/4 payment\.failed evt_\w+ → http:\S+\/always-fail: 500 in \d+ ms; failed/,
    );
  });

  it('lists deliveries with the deliveries command, whose --events output replays as duplicates', async () => {
    const webhookId = await register('/ok', ['project.created', 'project.deleted']);
    const created = await api(sandbox.url, 'POST', '/projects', { name: 'Difference Engine' });
    await api(sandbox.url, 'DELETE', `/projects/${(created.body as { id: string }).id}`);
    await waitFor(
      () => deliveries(webhookId),
      (value) => settled(value, 2),
    );

    const listing = await runCli(['deliveries', '--sandbox', sandbox.url, '--webhook', webhookId]);
    expect(listing.code).toBe(0);
    expect(listing.stdout).toMatch(
      /dlv_\w+ {2}project\.deleted {2}evt_\w+ {2}→ wh_\w+ {2}succeeded\n {4}#1 {2}\S+ {2}200 {2}\d+ ms/,
    );

    const events = await runCli(['deliveries', '--sandbox', sandbox.url, '--webhook', webhookId, '--events']);
    const lines = events.stdout.trim().split('\n');
    expect(lines.map((line: string) => JSON.parse(line).type)).toEqual([
      'project.created',
      'project.deleted',
    ]);
    const directory = await mkdtemp(join(tmpdir(), 'e2e-replay-'));
    try {
      const file = join(directory, 'events.jsonl');
      await writeFile(file, events.stdout);
      const replayed = await runCli(['replay', file, '--url', `${receiver.url}/ok`, '--secret', SECRET]);
      expect(replayed.code).toBe(0);
      expect(replayed.stdout.match(/x-webhook-duplicate: true/g)).toHaveLength(2);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});
