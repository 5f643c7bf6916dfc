/**
 * RedisStore when Redis fails: down, paused, restarted, lost mid-delivery, and a worker that dies
 * holding a claim. Each case runs against a redis-server of its own (never REDIS_URL: these tests
 * kill it) and prints what it measured. Two client configurations are compared: the recommended
 * fail-fast options, and ioredis's defaults (offline queue on), which only the core's deadline bounds.
 *
 * The fail-fast client deliberately has no `error` listener: the process surviving the outages (vitest
 * fails a run on an uncaught error) shows an ioredis `error` event cannot crash an application using
 * the store. (ioredis prints those events to stderr instead; the other client counts them, to halve
 * the noise.)
 */
import { Redis, type RedisOptions } from 'ioredis';
import {
  createWebhooks,
  DEFAULTS,
  StoreUnavailableError,
  signPayload,
  type WebhookError,
  type WebhookResponse,
} from 'service-webhooks';
import { RedisStore } from 'service-webhooks/redis';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { startReceiver } from '../../support/receiver-process.js';
import { RedisServer } from '../../support/redis-servers.js';
import { sleep } from '../../support/sleep.js';

const SECRET = 'whsec_faults';
const STORE_TIMEOUT_MS = DEFAULTS.storeTimeoutMs;
/** Room for scheduling on a busy 2-core machine; the bound proven is "within storeTimeoutMs". */
const MARGIN_MS = 500;
const LEASE_SECONDS = 2;

/** What the docs recommend. */
const FAIL_FAST: RedisOptions = { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 1_000 };

const figures: string[] = [];
const record = (line: string) => {
  figures.push(line);
  console.log(line);
};

async function ready(client: Redis): Promise<void> {
  const deadline = performance.now() + 15_000;
  while (client.status !== 'ready') {
    if (performance.now() > deadline) throw new Error(`client stuck in ${client.status}`);
    await sleep(20);
  }
}

async function notReady(client: Redis): Promise<void> {
  while (client.status === 'ready') await sleep(10);
}

function receiver(client: Redis) {
  const runs = new Map<string, number>();
  const errors: WebhookError[] = [];
  const webhooks = createWebhooks({
    secret: SECRET,
    store: new RedisStore({ client }),
    leaseSeconds: LEASE_SECONDS,
    handlerTimeoutMs: 1_000,
    storeTimeoutMs: STORE_TIMEOUT_MS,
  });
  let beforeComplete: (() => Promise<void>) | undefined;
  webhooks.onAny(async (event) => {
    runs.set(event.id, (runs.get(event.id) ?? 0) + 1);
    await beforeComplete?.();
  });
  webhooks.onError((error) => errors.push(error));
  return {
    runs,
    errors,
    webhooks,
    set beforeComplete(hook: (() => Promise<void>) | undefined) {
      beforeComplete = hook;
    },
    async send(event: { id: string }): Promise<{ response: WebhookResponse; ms: number; code?: string }> {
      const started = performance.now();
      const response = await deliver(webhooks, event, { secret: SECRET });
      const ms = Math.round(performance.now() - started);
      const code =
        response.status >= 400
          ? (JSON.parse(response.body) as { error: { code: string } }).error.code
          : undefined;
      return code === undefined ? { response, ms } : { response, ms, code };
    },
  };
}

let server: RedisServer;
let fast: Redis;
let patient: Redis;
let patientErrors = 0;

beforeAll(async () => {
  server = await RedisServer.start();
  fast = new Redis(server.url, FAIL_FAST);
  patient = new Redis(server.url);
  patient.on('error', () => {
    patientErrors++;
  });
  await Promise.all([ready(fast), ready(patient)]);
});

afterAll(async () => {
  fast?.disconnect();
  patient?.disconnect();
  await server?.destroy();
  console.log(
    `\nFault timings (storeTimeoutMs ${STORE_TIMEOUT_MS}, leaseSeconds ${LEASE_SECONDS}; ${patientErrors} ioredis error events on the default client, none fatal):\n${figures.join('\n')}`,
  );
});

beforeEach(async () => {
  await server.start();
  await Promise.all([ready(fast), ready(patient)]);
});

describe('RedisStore under Redis faults', () => {
  test('Redis down before a delivery: 503 store_unavailable within storeTimeoutMs, handler not run', async () => {
    const fastReceiver = receiver(fast);
    const patientReceiver = receiver(patient);
    await server.stop();
    await Promise.all([notReady(fast), notReady(patient)]);

    const a = await fastReceiver.send(createTestEvent('user.created'));
    const b = await patientReceiver.send(createTestEvent('user.created'));
    for (const [name, result, runs] of [
      ['fail-fast client', a, fastReceiver.runs],
      ['ioredis defaults', b, patientReceiver.runs],
    ] as const) {
      expect(result.response.status).toBe(503);
      expect(result.code).toBe('store_unavailable');
      expect(result.response.headers['retry-after']).toBeDefined();
      expect(result.ms).toBeLessThan(STORE_TIMEOUT_MS + MARGIN_MS);
      expect(runs.size).toBe(0);
      record(
        `Redis down, ${name}: ${result.response.status} ${result.code} in ${result.ms} ms, handler runs 0`,
      );
    }
    expect(fastReceiver.errors[0]).toBeInstanceOf(StoreUnavailableError);
  });

  test('CLIENT PAUSE: 503 store_unavailable within storeTimeoutMs, handler not run; the late claim only holds its lease', async () => {
    const fastReceiver = receiver(fast);
    const patientReceiver = receiver(patient);
    const eventA = createTestEvent('user.created');
    const eventB = createTestEvent('user.created');
    const pauseMs = 3_000;
    await server.command('CLIENT', 'PAUSE', String(pauseMs), 'ALL');
    const pausedAt = performance.now();

    const [a, b] = await Promise.all([fastReceiver.send(eventA), patientReceiver.send(eventB)]);
    for (const [name, result, runs] of [
      ['fail-fast client (commandTimeout 1000)', a, fastReceiver.runs],
      ['ioredis defaults', b, patientReceiver.runs],
    ] as const) {
      expect(result.response.status).toBe(503);
      expect(result.code).toBe('store_unavailable');
      expect(result.ms).toBeLessThan(STORE_TIMEOUT_MS + MARGIN_MS);
      expect(runs.size).toBe(0);
      record(
        `CLIENT PAUSE ${pauseMs} ms, ${name}: ${result.response.status} ${result.code} in ${result.ms} ms, handler runs 0`,
      );
    }

    // The claims were on the wire: Redis runs them when the pause ends. The sender's retry (after a
    // minute, here immediately) finds the event in progress until that orphan lease ends, then runs it.
    await sleep(pauseMs - (performance.now() - pausedAt) + 100);
    const retriedAt = performance.now();
    let retry = await fastReceiver.send(eventA);
    const firstRetry = retry.response.status;
    while (retry.response.status !== 200) {
      expect(retry.response.status).toBe(409);
      await sleep(100);
      retry = await fastReceiver.send(eventA);
    }
    expect(fastReceiver.runs.get(eventA.id)).toBe(1);
    record(
      `CLIENT PAUSE, retry after the pause: first answer ${firstRetry}, handled (200) ${Math.round(performance.now() - retriedAt)} ms later (the orphan claim's lease is ${LEASE_SECONDS * 1000} ms)`,
    );
  }, 20_000);

  test('Redis restarted mid-stream: deliveries fail with 503 during the outage and recover without restarting the app', async () => {
    const app = receiver(fast);
    const outageMs = 1_000;
    const statuses = new Map<number, number>();
    let killedAt = 0;
    let restartedAt = 0;
    let first503After = -1;
    let first200AfterRestart = -1;
    let stop = false;

    // A sender: a new event every 25 ms, each retried every 50 ms until it gets a 2xx.
    const sendOne = async () => {
      const event = createTestEvent('payment.succeeded');
      for (;;) {
        const { response } = await app.send(event);
        const now = performance.now();
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        if (response.status === 503 && killedAt && first503After < 0) first503After = now - killedAt;
        if (response.status === 200) {
          if (restartedAt && first200AfterRestart < 0) first200AfterRestart = now - restartedAt;
          return event.id;
        }
        await sleep(50);
      }
    };
    const sent: Promise<string>[] = [];
    const producer = (async () => {
      while (!stop) {
        sent.push(sendOne());
        await sleep(25);
      }
    })();

    await sleep(400);
    killedAt = performance.now();
    await server.stop();
    await sleep(outageMs);
    await server.start();
    restartedAt = performance.now();
    await ready(fast);
    const readyAfter = performance.now() - restartedAt;
    await sleep(500);
    stop = true;
    await producer;
    const ids = await Promise.all(sent);

    expect(first503After).toBeGreaterThanOrEqual(0);
    expect(first200AfterRestart).toBeGreaterThanOrEqual(0);
    expect([...statuses.keys()].every((status) => [200, 409, 503].includes(status))).toBe(true);
    for (const id of ids) expect(app.runs.get(id)).toBe(1);
    record(
      `Redis killed for ${outageMs} ms mid-stream (fail-fast client): ${ids.length} events, each handled once; answers ${JSON.stringify(Object.fromEntries(statuses))}; first 503 ${Math.round(first503After)} ms after the kill; client ready ${Math.round(readyAfter)} ms and first 200 ${Math.round(first200AfterRestart)} ms after the restart`,
    );
  }, 30_000);

  test('Redis lost between the handler and complete: 200 to the sender, onError told', async () => {
    for (const [name, client] of [
      ['fail-fast client', fast],
      ['ioredis defaults', patient],
    ] as const) {
      await server.start();
      await ready(client);
      const app = receiver(client);
      app.beforeComplete = () => server.stop();
      const event = createTestEvent('payment.refunded');
      const result = await app.send(event);
      expect(result.response.status).toBe(200);
      expect(app.runs.get(event.id)).toBe(1);
      const reported = app.errors.find((error) => error instanceof StoreUnavailableError);
      expect(reported?.message).toMatch(/record the event as handled/);
      expect(result.ms).toBeLessThan(STORE_TIMEOUT_MS + MARGIN_MS);
      record(
        `Redis lost before complete, ${name}: ${result.response.status} in ${result.ms} ms, onError: ${reported?.name}`,
      );
    }
  });

  test('a worker process that dies holding a claim: the next delivery after the lease claims and runs it', async () => {
    const counterKey = `counts:{${crypto.randomUUID()}}`;
    const env = {
      SECRET,
      COUNTER_KEY: counterKey,
      REDIS_URL: server.url,
      LEASE_SECONDS: '1',
      HANDLER_TIMEOUT_MS: '500',
    };
    const [doomed, survivor] = await Promise.all([
      startReceiver({ ...env, RECEIVER_NAME: 'doomed' }),
      startReceiver({ ...env, RECEIVER_NAME: 'survivor' }),
    ]);
    try {
      const body = JSON.stringify(createTestEvent('user.deleted', { data: { crashIn: 'doomed' } }));
      const id = (JSON.parse(body) as { id: string }).id;
      const post = (url: string) =>
        fetch(url, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json', 'x-service-signature': signPayload(body, SECRET) },
        });

      await expect(post(doomed.url)).rejects.toThrow();
      const crashedAt = performance.now();
      expect(await doomed.exited).toBe('SIGKILL');

      const answers: number[] = [];
      let handledAfter = -1;
      while (handledAfter < 0) {
        const response = await post(survivor.url);
        answers.push(response.status);
        if (response.status === 200) handledAfter = performance.now() - crashedAt;
        else await sleep(50);
        expect(performance.now() - crashedAt).toBeLessThan(5_000);
      }
      expect(answers[0]).toBe(409);
      expect(answers.slice(0, -1).every((status) => status === 409)).toBe(true);
      const counter = new Redis(server.url);
      expect(await counter.hget(counterKey, id)).toBe('1');
      counter.disconnect();
      record(
        `Worker killed holding a 1000 ms lease: the other process answered 409 ${answers.length - 1} times, then ran it (200) ${Math.round(handledAfter)} ms after the crash; handler runs 1`,
      );
    } finally {
      await Promise.all([doomed.stop(), survivor.stop()]);
    }
  }, 30_000);
});
