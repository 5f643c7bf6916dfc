/**
 * examples/inbox on the built package: the web process acknowledges a delivery while no worker runs
 * (the event waits in Redis), the worker process then runs its handler once, and a retry of the
 * delivery is a duplicate. Both processes run on a Redis of the test's own.
 */
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { sendHttp } from '../adapters/http-client.js';
import { RedisServer } from '../support/redis-servers.js';
import { type RunningExample, startExample } from './run-example.js';

const SECRET = 'whsec_example_test';
let redis: RedisServer;

beforeAll(async () => {
  redis = await RedisServer.start();
  // startExample hands the examples this process's environment (each test file runs in its own worker).
  process.env.REDIS_URL = redis.url;
  process.env.INBOX_QUEUE = `example-${crypto.randomUUID().slice(0, 8)}`;
});

afterAll(async () => {
  await redis?.destroy();
});

test('examples/inbox: the web process queues while no worker runs; the worker handles it once (built package)', async () => {
  const running: RunningExample[] = [];
  try {
    const web = startExample('examples/inbox/web.ts');
    running.push(web);
    const [, port] = await web.waitFor(/Listening on http:\/\/\S+:(\d+)\/webhooks/);
    const email = `ada+${Date.now()}@example.com`;
    const body = JSON.stringify(createTestEvent('user.created', { data: { email } }));
    const send = () =>
      sendHttp(`http://127.0.0.1:${port}/webhooks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-service-signature': signPayload(body, SECRET) },
        body: new TextEncoder().encode(body),
      });
    const first = await send();
    expect(first.status, first.body).toBe(200);
    expect(first.body).toBe('{"received":true}');

    const worker = startExample('examples/inbox/worker.ts');
    running.push(worker);
    let printed = '';
    worker.child.stdout?.on('data', (chunk: Buffer) => {
      printed += chunk.toString();
    });
    await worker.waitFor(/Worker ready on example-/);
    const [line] = await worker.waitFor(
      new RegExp(`user\\.created ${email.replace(/[.+]/g, '\\$&')} attempt 1, received \\S+`),
    );
    expect(line).toContain('attempt 1');
    const retry = await send();
    expect(retry.status).toBe(200);
    expect(retry.headers['x-webhook-duplicate']).toBe('true');
    // Once: a second run would print a second line.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(printed.split('\n').filter((text) => text.startsWith(`user.created ${email} `))).toHaveLength(1);
  } finally {
    await Promise.all(running.map((example) => example.stop()));
  }
}, 60_000);
