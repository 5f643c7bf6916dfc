/**
 * What a store or an inbox engine finds between calls (a pooled connection dropped while idle, an
 * eviction policy that would lose records) reaches each receiver that uses it: its `onError`, or
 * stderr, never nothing and never an unhandled `'error'` event.
 */
import {
  type BackgroundErrorListener,
  createWebhooks,
  type InboxQueue,
  MemoryStore,
  StoreUnavailableError,
  type WebhookError,
} from 'service-webhooks';
import { afterEach, expect, test, vi } from 'vitest';

class ObservedStore extends MemoryStore {
  readonly listeners: BackgroundErrorListener[] = [];
  onBackgroundError(listener: BackgroundErrorListener): void {
    this.listeners.push(listener);
  }
  fail(error: WebhookError) {
    for (const listener of this.listeners) listener(error);
  }
}

afterEach(() => {
  vi.restoreAllMocks();
});

test('each receiver that uses the store listens once, and its onError hears the store', () => {
  const store = new ObservedStore();
  const first: WebhookError[] = [];
  const second: WebhookError[] = [];
  createWebhooks({ secret: 'whsec_a', store }).onError((error) => {
    first.push(error);
  });
  createWebhooks({ secret: 'whsec_b', store }).onError((error) => {
    second.push(error);
  });
  expect(store.listeners).toHaveLength(2);
  const dropped = new StoreUnavailableError('An idle connection was lost.');
  store.fail(dropped);
  expect(first).toEqual([dropped]);
  expect(second).toEqual([dropped]);
});

test('with a logger but no onError, it is said on stderr (a logger takes delivery records only), with the cause’s stack alone', () => {
  const stderr = vi.spyOn(console, 'error').mockImplementation(() => {});
  const store = new ObservedStore();
  const logger = { info: vi.fn(), warn: vi.fn(), error: vi.fn() };
  createWebhooks({ secret: 'whsec_a', store, logger });
  const cause = Object.assign(new Error('terminating connection due to administrator command'), {
    client: { huge: 'connection state' },
  });
  store.fail(new StoreUnavailableError('An idle connection was lost.', { cause }));
  expect(stderr).toHaveBeenCalledTimes(1);
  const [line, detail] = stderr.mock.calls[0]!;
  expect(line).toMatch(/StoreUnavailableError \(store_unavailable\): An idle connection was lost/);
  expect(detail).toBe(cause.stack);
  expect(logger.error).not.toHaveBeenCalled();
});

test('an inbox engine is listened to as well', () => {
  const listeners: BackgroundErrorListener[] = [];
  const inbox: InboxQueue = {
    enqueue: async () => {},
    onBackgroundError: (listener) => {
      listeners.push(listener);
    },
  };
  const heard: WebhookError[] = [];
  createWebhooks({ secret: 'whsec_a', inbox }).onError((error) => {
    heard.push(error);
  });
  const error = new StoreUnavailableError('queue connection lost');
  listeners[0]!(error);
  expect(heard).toEqual([error]);
});
