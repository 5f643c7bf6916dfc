/**
 * The answer of a request whose handlers run asynchronously, end to end through `handle()`: the edges of
 * the path that the per-delivery allocation work reshaped (the runner's reactions bound to its entry,
 * the deadline queue arming one timer for many deliveries). Each delivery must get its own answer,
 * whatever order the handlers settle in, and a nested `handle()` from a handler must not take the
 * outer delivery's answer.
 */
import { createWebhooks, type WebhookResponse } from 'service-webhooks';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { describe, expect, test } from 'vitest';
import { sleep } from '../support/sleep.js';

const secret = 'whsec_handler_answer';

describe('a request with asynchronous handlers', () => {
  test('a handler that throws synchronously is 500 handler_failed, and the retry runs it again', async () => {
    const webhooks = createWebhooks({ secret });
    let calls = 0;
    webhooks.on('user.created', (() => {
      calls++;
      if (calls === 1) throw new Error('sync boom');
      return Promise.resolve();
    }) as () => Promise<void>);
    const event = createTestEvent('user.created');
    const first = await deliver(webhooks, event, { secret });
    expect(first.status).toBe(500);
    expect(JSON.parse(first.body)).toMatchObject({ error: { code: 'handler_failed' } });
    expect((await deliver(webhooks, event, { secret })).status).toBe(200);
    expect(calls).toBe(2);
  });

  test('a handler that rejects is 500 handler_failed, and its claim is given back', async () => {
    const webhooks = createWebhooks({ secret });
    let calls = 0;
    webhooks.on('user.created', async () => {
      calls++;
      await sleep(1);
      if (calls === 1) throw new Error('async boom');
    });
    const event = createTestEvent('user.created');
    expect((await deliver(webhooks, event, { secret })).status).toBe(500);
    expect((await deliver(webhooks, event, { secret })).status).toBe(200);
    expect(calls).toBe(2);
  });

  test('deliveries whose handlers settle in the reverse order each get their own answer', async () => {
    const webhooks = createWebhooks({ secret });
    const failing = new Set<string>();
    webhooks.on('user.created', async (event) => {
      // The first delivered settles last.
      await sleep(Number(event.data.name));
      if (failing.has(event.id)) throw new Error('this one fails');
    });
    const events = Array.from({ length: 8 }, (_, index) => {
      const event = createTestEvent('user.created');
      (event.data as { name: string }).name = String(40 - index * 5);
      if (index % 3 === 0) failing.add(event.id);
      return event;
    });
    const answers = await Promise.all(events.map((event) => deliver(webhooks, event, { secret })));
    expect(answers.map((answer) => answer.status)).toEqual(
      events.map((event) => (failing.has(event.id) ? 500 : 200)),
    );
  });

  test('past the budget: 503 handler_timeout now, and the late success is recorded for the retry', async () => {
    const webhooks = createWebhooks({ secret, handlerTimeoutMs: 30 });
    let finished = 0;
    webhooks.on('user.created', async () => {
      await sleep(80);
      finished++;
    });
    const event = createTestEvent('user.created');
    const started = performance.now();
    const answer = await deliver(webhooks, event, { secret });
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'handler_timeout' } });
    expect(performance.now() - started).toBeLessThan(80);
    // While the late work runs, a retry finds the claim held.
    expect((await deliver(webhooks, event, { secret })).status).toBe(409);
    await sleep(100);
    expect(finished).toBe(1);
    const retry = await deliver(webhooks, event, { secret });
    expect(retry.status).toBe(200);
    expect(retry.headers['x-webhook-duplicate']).toBe('true');
  });

  test('deliveries that settle at once, one after another, still time out one that does not', async () => {
    // The deadline queue arms its timer for quick deliveries too (from the second on); a slow one
    // added while that timer is armed must still be answered at its own deadline.
    const webhooks = createWebhooks({ secret, handlerTimeoutMs: 40 });
    webhooks.on('user.created', async () => {});
    webhooks.on('user.updated', () => sleep(200));
    for (let i = 0; i < 5; i++)
      expect((await deliver(webhooks, createTestEvent('user.created'), { secret })).status).toBe(200);
    await sleep(15);
    const started = performance.now();
    const slow = await deliver(webhooks, createTestEvent('user.updated'), { secret });
    expect(slow.status).toBe(503);
    expect(performance.now() - started).toBeLessThan(150);
  });

  test('a handler that delivers another event to the same receiver: each delivery gets its own answer', async () => {
    const webhooks = createWebhooks({ secret });
    const inner = createTestEvent('user.updated');
    let innerAnswer: WebhookResponse | undefined;
    const ran: string[] = [];
    webhooks.on('user.updated', async () => {
      ran.push('inner');
      await sleep(5);
      throw new Error('the inner delivery fails');
    });
    webhooks.on('user.created', async () => {
      ran.push('outer');
      // Asked while the outer delivery's handlers are on the stack, answered before they settle.
      innerAnswer = await deliver(webhooks, inner, { secret });
    });
    const outer = await deliver(webhooks, createTestEvent('user.created'), { secret });
    expect(ran).toEqual(['outer', 'inner']);
    expect(innerAnswer?.status).toBe(500);
    expect(outer.status).toBe(200);
    expect(outer.headers['x-webhook-duplicate']).toBeUndefined();
  });

  test('a nested delivery whose handler is synchronous is answered at once, the outer one after', async () => {
    const webhooks = createWebhooks({ secret });
    let nested: Promise<WebhookResponse> | undefined;
    webhooks.on('user.updated', () => {});
    webhooks.on('user.created', async () => {
      nested = deliver(webhooks, createTestEvent('user.updated'), { secret });
    });
    const outer = await deliver(webhooks, createTestEvent('user.created'), { secret });
    expect(outer.status).toBe(200);
    expect((await nested!).status).toBe(200);
  });
});
