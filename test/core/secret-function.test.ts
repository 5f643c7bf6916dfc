/**
 * `secret` as a function, called on first use: Next.js builds without the secret, Workers read it from
 * `env` inside `fetch`, a secrets manager is asked once. What it returns is held to the same rules as
 * a literal secret, at first use instead of at construction.
 */
import {
  ConfigurationError,
  createWebhooks,
  MemoryStore,
  SecretUnavailableError,
  type WebhookError,
} from 'service-webhooks';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { describe, expect, test, vi } from 'vitest';
import { sealed } from '../support/sealed-entry.js';

const SECRET = 'whsec_from_a_function';

describe('secret as a function', () => {
  test('is not called at construction, so a build without the secret succeeds', () => {
    const source = vi.fn(() => process.env.SERVICE_WEBHOOKS_TEST_UNSET_SECRET as string);
    expect(() => createWebhooks({ secret: source })).not.toThrow();
    expect(source).not.toHaveBeenCalled();
  });

  test('a sync function is called once, on the first delivery, and its secret verifies', async () => {
    const source = vi.fn(() => SECRET);
    const webhooks = createWebhooks({ secret: source });
    let runs = 0;
    webhooks.on('user.created', () => {
      runs++;
    });
    for (let i = 0; i < 3; i++) {
      expect((await deliver(webhooks, createTestEvent('user.created'), { secret: SECRET })).status).toBe(200);
    }
    expect(source).toHaveBeenCalledTimes(1);
    expect(runs).toBe(3);
  });

  test('an async function is called once for the deliveries that arrive while it runs', async () => {
    const source = vi.fn(async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      return [SECRET, 'whsec_previous'];
    });
    const webhooks = createWebhooks({ secret: source }).on('user.updated', () => {});
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        deliver(webhooks, createTestEvent('user.updated'), { secret: i % 2 ? SECRET : 'whsec_previous' }),
      ),
    );
    expect(responses.map((response) => response.status)).toEqual(Array(10).fill(200));
    expect(source).toHaveBeenCalledTimes(1);
    await expect(
      webhooks.verifyAndParse(
        '{}',
        'sha256=0000000000000000000000000000000000000000000000000000000000000000',
      ),
    ).rejects.toMatchObject({ code: 'invalid_signature' });
  });

  test.each([
    [
      'throws',
      () => {
        throw new Error('vault sealed');
      },
      /vault sealed/,
    ],
    ['rejects', () => Promise.reject(new Error('secrets manager timed out')), /timed out/],
    ['returns an empty secret', () => '', /`secret` is empty/],
    ['returns white space', async () => '  \n', /only white space/],
    ['returns nothing', () => undefined as unknown as string, /`secret` is missing/],
  ])(
    'a function that %s: 503 secret_unavailable, reported with the reason; retried next delivery',
    async (_, failing, reason) => {
      let broken = true;
      const source = vi.fn(() => (broken ? failing() : SECRET));
      const errors: WebhookError[] = [];
      const webhooks = createWebhooks({ secret: source }).onError((error) => {
        errors.push(error);
      });
      let runs = 0;
      webhooks.on('payment.failed', () => {
        runs++;
      });
      const event = createTestEvent('payment.failed');
      const refused = await deliver(webhooks, event, { secret: SECRET });
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('60');
      expect(JSON.parse(refused.body).error.code).toBe('secret_unavailable');
      expect(errors).toHaveLength(1);
      expect(errors[0]).toBeInstanceOf(SecretUnavailableError);
      expect(String((errors[0]!.cause as Error).message)).toMatch(reason);
      if (/secret/.test(String(reason))) expect(errors[0]!.cause).toBeInstanceOf(ConfigurationError);
      expect(runs).toBe(0);

      broken = false;
      expect((await deliver(webhooks, event, { secret: SECRET })).status).toBe(200);
      expect(runs).toBe(1);
      expect(source).toHaveBeenCalledTimes(2);
    },
  );

  test('a function that never settles: 503 secret_unavailable within storeTimeoutMs, reported; the next delivery asks again', async () => {
    // Before the deadline, the pending call was shared by every later delivery: none was ever answered.
    let answer: ((secret: string) => void) | undefined;
    const source = vi.fn(() => {
      if (source.mock.calls.length <= 2) return new Promise<string>(() => {}); // a secrets manager that hangs
      return new Promise<string>((resolve) => {
        answer = resolve;
      });
    });
    const errors: WebhookError[] = [];
    const webhooks = createWebhooks({ secret: source, storeTimeoutMs: 50 }).onError((error) => {
      errors.push(error);
    });
    let runs = 0;
    webhooks.on('user.deleted', () => {
      runs++;
    });
    const event = createTestEvent('user.deleted');
    const started = performance.now();
    const [first, second] = await Promise.all([
      deliver(webhooks, event, { secret: SECRET }),
      deliver(webhooks, event, { secret: SECRET }),
    ]);
    expect(performance.now() - started).toBeLessThan(2_000);
    for (const refused of [first, second]) {
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('60');
      expect(JSON.parse(refused.body).error.code).toBe('secret_unavailable');
    }
    // One call for the two deliveries that waited together, one failure reported for it.
    expect(source).toHaveBeenCalledTimes(1);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(SecretUnavailableError);
    expect(errors[0]!.message).toMatch(/did not answer within 50 ms/);

    // The next delivery calls the function again rather than waiting on the hung call.
    expect((await deliver(webhooks, event, { secret: SECRET })).status).toBe(503);
    expect(source).toHaveBeenCalledTimes(2);

    // Once the function answers, deliveries succeed without a restart, and it is not called again.
    const pending = deliver(webhooks, event, { secret: SECRET });
    await vi.waitFor(() => expect(answer).toBeDefined());
    answer!(SECRET);
    expect((await pending).status).toBe(200);
    expect((await deliver(webhooks, createTestEvent('user.deleted'), { secret: SECRET })).status).toBe(200);
    expect(source).toHaveBeenCalledTimes(3);
    expect(runs).toBe(2);
    expect(errors).toHaveLength(2);
  });

  test('a secret that arrives after its deadline still serves later deliveries', async () => {
    let answer: ((secret: string) => void) | undefined;
    const source = vi.fn(
      () =>
        new Promise<string>((resolve) => {
          answer = resolve;
        }),
    );
    const webhooks = createWebhooks({ secret: source, storeTimeoutMs: 30 }).onError(() => {});
    webhooks.on('user.created', () => {});
    expect((await deliver(webhooks, createTestEvent('user.created'), { secret: SECRET })).status).toBe(503);
    answer!(SECRET);
    await Promise.resolve();
    expect((await deliver(webhooks, createTestEvent('user.created'), { secret: SECRET })).status).toBe(200);
    expect(source).toHaveBeenCalledTimes(1);
  });

  test('a body over maxBodyBytes is refused 413 before the secret is asked for', async () => {
    const source = vi.fn(() => SECRET);
    const webhooks = createWebhooks({ secret: source, maxBodyBytes: 16 });
    const response = await deliver(webhooks, createTestEvent('user.created'), { secret: SECRET });
    expect(response.status).toBe(413);
    expect(source).not.toHaveBeenCalled();
  });

  test('the dedup scope is the secret’s, however it is given: a literal and a function deduplicate together', async () => {
    const store = new MemoryStore();
    let runs = 0;
    const count = () => {
      runs++;
    };
    const literal = createWebhooks({ secret: SECRET, store }).onAny(count);
    const lazy = createWebhooks({ secret: async () => SECRET, store }).onAny(count);
    const other = createWebhooks({ secret: () => 'whsec_another_registration', store }).onAny(count);
    const event = createTestEvent('project.deleted');
    await deliver(literal, event, { secret: SECRET });
    expect((await deliver(lazy, event, { secret: SECRET })).headers['x-webhook-duplicate']).toBe('true');
    await deliver(other, event, { secret: 'whsec_another_registration' });
    expect(runs).toBe(2);
  });
});

describe('secret as a function, in a worker', () => {
  test("a worker's first run asks for the secret (the scope depends on it); a failing one rejects, and runs nothing", async () => {
    let calls = 0;
    let ran = 0;
    const webhooks = createWebhooks({
      secret: () => {
        calls++;
        if (calls === 1) throw new Error('secrets manager down');
        return SECRET;
      },
      store: new MemoryStore(),
    }).on('user.created', () => {
      ran++;
    });
    webhooks.onError(() => {});
    const entry = await sealed(
      { event: createTestEvent('user.created'), receivedAt: Date.now(), secretIndex: 0 },
      SECRET,
    );
    await expect(webhooks.process(entry)).rejects.toBeInstanceOf(SecretUnavailableError);
    expect(ran).toBe(0);
    expect(await webhooks.process(entry)).toBe('handled');
    expect([calls, ran]).toEqual([2, 1]);
  });
});
