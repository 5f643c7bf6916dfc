import type { DashboardEvent } from '../api-types.js';
import { token } from './api.js';

export type StreamState = 'connecting' | 'live' | 'disconnected';

export interface StreamHandlers {
  readonly onEvent: (event: DashboardEvent) => void;
  readonly onState: (state: StreamState) => void;
}

const EVENT_TYPES: readonly DashboardEvent['type'][] = [
  'delivery',
  'cleared',
  'inbox',
  'report',
  'unmatched',
  'sync',
];
const MAX_BACKOFF_MS = 10_000;

/**
 * The server's event stream. EventSource retries by itself after a dropped connection, but gives up for
 * good on an HTTP error (a restarted server with a new token answers 401, a stopped one refuses): then
 * this reopens it with a growing delay, from the last event id seen, as EventSource does by itself
 * with `Last-Event-ID`. Each (re)open is followed by a `sync` event: whether the server took up where
 * the page left off, or the page must load the list. Returns a function that closes it.
 */
export function openStream(handlers: StreamHandlers): () => void {
  let source: EventSource | undefined;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  let backoff = 500;
  let closed = false;
  let lastEventId = '';

  const connect = (): void => {
    handlers.onState('connecting');
    const resume = lastEventId === '' ? '' : `&last_event_id=${encodeURIComponent(lastEventId)}`;
    const current = new EventSource(`/_dev/api/events?token=${encodeURIComponent(token)}${resume}`);
    source = current;
    current.onopen = () => {
      backoff = 500;
      handlers.onState('live');
    };
    current.onerror = () => {
      if (closed) return;
      handlers.onState('disconnected');
      if (current.readyState === EventSource.CLOSED) {
        current.close();
        retryTimer = setTimeout(connect, backoff);
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    };
    for (const type of EVENT_TYPES) {
      current.addEventListener(type, (message: MessageEvent<string>) => {
        if (message.lastEventId !== '') lastEventId = message.lastEventId;
        let data: unknown;
        try {
          data = JSON.parse(message.data);
        } catch {
          return;
        }
        // The server sends the contract's shape under each event name.
        handlers.onEvent({ type, data } as DashboardEvent);
      });
    }
  };

  connect();
  return () => {
    closed = true;
    clearTimeout(retryTimer);
    source?.close();
  };
}
