import { describe, expect, test, vi } from 'vitest';
import { now } from '../../src/clock.js';
import { TimeoutQueue } from '../../src/timeout-queue.js';
import { sleep } from '../support/sleep.js';

/** Real timers throughout: the queue's whole point is how it drives the one Node timer it owns. */
describe('TimeoutQueue', () => {
  test('fires each timeout once, not before its duration, in deadline order', async () => {
    const queue = new TimeoutQueue(30);
    const fired: { name: string; after: number }[] = [];
    const started = performance.now();
    queue.add(() => fired.push({ name: 'first', after: performance.now() - started }));
    await sleep(10);
    queue.add(() => fired.push({ name: 'second', after: performance.now() - started }));
    await sleep(80);
    expect(fired.map((entry) => entry.name)).toEqual(['first', 'second']);
    expect(fired[0]!.after).toBeGreaterThanOrEqual(29);
    expect(fired[1]!.after).toBeGreaterThanOrEqual(39);
  });

  test('a cancelled timeout never fires; cancel answers whether it was still pending', async () => {
    const queue = new TimeoutQueue(20);
    const fired: string[] = [];
    const head = queue.add(() => fired.push('head'));
    const middle = queue.add(() => fired.push('middle'));
    const tail = queue.add(() => fired.push('tail'));
    expect(queue.cancel(middle)).toBe(true);
    expect(queue.cancel(middle)).toBe(false);
    expect(queue.cancel(head)).toBe(true);
    await sleep(60);
    expect(fired).toEqual(['tail']);
    expect(queue.cancel(tail)).toBe(false);
  });

  test('a shorter duration given to add is placed ahead of longer ones and fires first', async () => {
    const queue = new TimeoutQueue(200);
    const fired: string[] = [];
    queue.add(() => fired.push('default'));
    queue.add(() => fired.push('short'), now(), 20);
    await sleep(60);
    expect(fired).toEqual(['short']);
    await sleep(200);
    expect(fired).toEqual(['short', 'default']);
  });

  test('a start in the past counts against the duration', async () => {
    const queue = new TimeoutQueue(50);
    let firedAfter = -1;
    // Starts are readings of the core's clock, as the receiver passes them.
    const added = now();
    queue.add(() => {
      firedAfter = now() - added;
    }, added - 40);
    await sleep(100);
    expect(firedAfter).toBeGreaterThanOrEqual(9);
    expect(firedAfter).toBeLessThan(50);
  });

  test('the timer does not keep the process alive, and one timer serves many timeouts', () => {
    const before = process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const queue = new TimeoutQueue(10_000);
    const entries = Array.from({ length: 1000 }, () => queue.add(() => {}));
    const after = process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    expect(after).toBe(before);
    for (const entry of entries) expect(queue.cancel(entry)).toBe(true);
  });

  test('a timeout cancelled by the reaction of a settled promise never arms a timer', async () => {
    const setTimer = vi.spyOn(globalThis, 'setTimeout');
    // Past every microtask, without a timer of its own.
    const afterMicrotasks = () => new Promise((resolve) => setImmediate(resolve));
    try {
      const queue = new TimeoutQueue(10_000);
      // How withDeadline and runHandlersWithin use the queue: add, then wait on the work's promise.
      const settledAtOnce = queue.add(() => {});
      await Promise.resolve('done').then(() => queue.cancel(settledAtOnce));
      await afterMicrotasks();
      expect(setTimer).not.toHaveBeenCalled();
      // The control: a timeout still pending after the microtasks gets the timer.
      const pending = queue.add(() => {});
      await afterMicrotasks();
      expect(setTimer).toHaveBeenCalledTimes(1);
      queue.cancel(pending);
    } finally {
      setTimer.mockRestore();
    }
  });

  test('from the second arming on, a queue found empty is armed all the same, and serves the timeouts after it', async () => {
    const setTimer = vi.spyOn(globalThis, 'setTimeout');
    const afterMicrotasks = () => new Promise((resolve) => setImmediate(resolve));
    const settleAtOnce = async (queue: TimeoutQueue) => {
      const entry = queue.add(() => {});
      await Promise.resolve('done').then(() => queue.cancel(entry));
      await afterMicrotasks();
    };
    try {
      const queue = new TimeoutQueue(10_000);
      await settleAtOnce(queue);
      expect(setTimer).not.toHaveBeenCalled();
      await settleAtOnce(queue);
      expect(setTimer).toHaveBeenCalledTimes(1);
      // Every later timeout of the queue's duration falls due after the armed one: no arming at all.
      for (let i = 0; i < 100; i++) await settleAtOnce(queue);
      expect(setTimer).toHaveBeenCalledTimes(1);
      // A shorter one is due first, so it is armed for, and fires on time.
      let fired = false;
      queue.add(() => (fired = true), now(), 20);
      await afterMicrotasks();
      expect(setTimer).toHaveBeenCalledTimes(2);
      await sleep(60);
      expect(fired).toBe(true);
    } finally {
      setTimer.mockRestore();
    }
  });

  test('a timer armed for nothing fires, rests, and the next pending timeout is armed and fires', async () => {
    const queue = new TimeoutQueue(20);
    const settleAtOnce = async () => {
      const entry = queue.add(() => {});
      await Promise.resolve().then(() => queue.cancel(entry));
    };
    await settleAtOnce();
    await sleep(1);
    await settleAtOnce(); // armed, for a timeout already cancelled
    await sleep(50); // fired, found nothing due
    const started = now();
    let firedAfter = -1;
    queue.add(() => {
      firedAfter = now() - started;
    });
    await sleep(80);
    expect(firedAfter).toBeGreaterThanOrEqual(19);
  });
});
