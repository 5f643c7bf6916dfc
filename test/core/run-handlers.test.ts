/**
 * The handler runner on its own: order, synchronous and asynchronous handlers, failures, the budget,
 * and the lazily made abort signal. The receiver's tests cover it end to end; these pin its contract.
 */
import { HandlerFailedError, HandlerTimeoutError, type WebhookEvent } from 'service-webhooks';
import { createTestEvent } from 'service-webhooks/testing';
import { describe, expect, test } from 'vitest';
import {
  DeliveryContext,
  type HandlerOutcome,
  runInOrder,
  runHandlersWithin as runWith,
  SUCCEEDED,
} from '../../src/run-handlers.js';
import { TimeoutQueue } from '../../src/timeout-queue.js';
import { sleep } from '../support/sleep.js';

const event = createTestEvent('payment.failed') as unknown as WebhookEvent;
const context = () => new DeliveryContext(0, 1, Date.now());

describe('runInOrder', () => {
  test('synchronous handlers run in order in the same tick, and the outcome is a plain value', () => {
    const order: number[] = [];
    const outcome = runInOrder(
      [() => order.push(1), () => order.push(2), () => order.push(3)],
      event,
      context(),
    );
    expect(outcome).toBe(SUCCEEDED);
    expect(order).toEqual([1, 2, 3]);
  });

  test('a handler that throws synchronously stops the run and is the failure', () => {
    const later: string[] = [];
    const boom = new Error('boom');
    const outcome = runInOrder(
      [
        () => {
          throw boom;
        },
        () => later.push('ran'),
      ],
      event,
      context(),
    );
    expect(outcome).toMatchObject({ kind: 'failed' });
    const { error } = outcome as { error: HandlerFailedError };
    expect(error).toBeInstanceOf(HandlerFailedError);
    expect(error.cause).toBe(boom);
    expect(later).toEqual([]);
  });

  test('from the first pending handler on, the rest wait for it, in order', async () => {
    const order: string[] = [];
    const running = runInOrder(
      [
        () => order.push('sync'),
        async () => {
          await sleep(5);
          order.push('async');
        },
        () => order.push('after'),
      ],
      event,
      context(),
    );
    expect(running).toBeInstanceOf(Promise);
    expect(order).toEqual(['sync']);
    await running;
    expect(order).toEqual(['sync', 'async', 'after']);
  });
});

/** The runner with the outcome itself as the continuation's result. */
const runHandlersWithin = (
  handlers: Parameters<typeof runInOrder>[0],
  on: WebhookEvent,
  ctx: DeliveryContext,
  timeoutMs: number,
  timeouts: TimeoutQueue,
) =>
  Promise.resolve(
    runWith(
      handlers,
      on,
      ctx,
      timeoutMs,
      timeouts,
      (_: undefined, outcome: HandlerOutcome) => outcome,
      undefined,
    ),
  );

describe('runHandlersWithin', () => {
  test('with `failed`, what the outcome step throws or rejects with becomes its answer; without, a rejection', async () => {
    const timeouts = new TimeoutQueue(1_000);
    const bug = new Error('bug in the outcome step');
    const failed = (thenContext: string, cause: unknown) => `${thenContext}: ${(cause as Error).message}`;
    const throwing = () => {
      throw bug;
    };
    const rejecting = () => Promise.reject(bug);
    for (const then of [throwing, rejecting]) {
      await expect(
        runWith([async () => {}], event, context(), 1_000, timeouts, then, 'answered', undefined, failed),
      ).resolves.toBe('answered: bug in the outcome step');
      await expect(
        Promise.resolve(runWith([async () => {}], event, context(), 1_000, timeouts, then, 'answered')),
      ).rejects.toBe(bug);
    }
  });

  test('asynchronous success and failure come back as outcomes, never as rejections', async () => {
    const timeouts = new TimeoutQueue(1_000);
    await expect(runHandlersWithin([async () => {}], event, context(), 1_000, timeouts)).resolves.toBe(
      SUCCEEDED,
    );
    const failed = await runHandlersWithin(
      [
        async () => {
          throw new Error('down');
        },
      ],
      event,
      context(),
      1_000,
      timeouts,
    );
    expect(failed.kind).toBe('failed');
  });

  test('past the budget: the signal aborts with HandlerTimeoutError, and the rest still settles', async () => {
    const timeouts = new TimeoutQueue(20);
    const ctx = context();
    let seen: AbortSignal | undefined;
    const outcome = await runHandlersWithin(
      [
        async (_event, { signal }) => {
          seen = signal;
          await sleep(60);
        },
      ],
      event,
      ctx,
      20,
      timeouts,
    );
    expect(outcome.kind).toBe('timed_out');
    expect(seen?.aborted).toBe(true);
    expect(seen?.reason).toBeInstanceOf(HandlerTimeoutError);
    if (outcome.kind !== 'timed_out') throw new Error('unreachable');
    await expect(outcome.rest).resolves.toBe(SUCCEEDED);
  });
});

test('a continuation that throws after an asynchronous handler rejects the run rather than leaving it unsettled', async () => {
  const bug = new Error('a bug in the continuation');
  const run = runWith(
    [async () => {}],
    event,
    context(),
    1_000,
    new TimeoutQueue(1_000),
    () => {
      throw bug;
    },
    undefined,
  );
  await expect(run).rejects.toBe(bug);
});

describe('DeliveryContext', () => {
  test('a signal first read after an abort is already aborted, with the same reason', () => {
    const ctx = context();
    const reason = new Error('stop');
    ctx.abort(reason);
    expect(ctx.signal.aborted).toBe(true);
    expect(ctx.signal.reason).toBe(reason);
  });

  test('carries the attempt and the time the event was received', () => {
    const ctx = new DeliveryContext(1, 3, 1_700_000_000_000);
    expect({ ...ctx }).toMatchObject({ secretIndex: 1, attempt: 3, receivedAt: 1_700_000_000_000 });
  });
});
