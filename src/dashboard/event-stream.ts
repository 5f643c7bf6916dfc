import type { ServerResponse } from 'node:http';
import type { DashboardEvent } from './api-types.js';

/** A comment line every so often keeps proxies and idle timers from closing a quiet stream. */
const HEARTBEAT_MS = 15_000;

/**
 * The pages listening for changes, over server-sent events: one long response per page, each change
 * written to all of them as it happens (no polling, so a new attempt shows as soon as it is made).
 */
export class EventStream {
  readonly #listeners = new Set<ServerResponse>();
  #heartbeat: NodeJS.Timeout | undefined;

  /** How many pages listen now (the inbox's figures are read only while one does). */
  get size(): number {
    return this.#listeners.size;
  }

  /** Make `response` a listener until its page goes away. */
  listen(response: ServerResponse): number {
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    });
    // Reconnect after a second when the connection drops (EventSource's default is three).
    response.write('retry: 1000\n\n');
    this.#listeners.add(response);
    response.on('close', () => {
      this.#listeners.delete(response);
      if (this.#listeners.size === 0) this.#stopHeartbeat();
    });
    this.#heartbeat ??= setInterval(() => this.#writeAll(': keep-alive\n\n'), HEARTBEAT_MS).unref();
    return 200;
  }

  /** Send `event` to every listener. */
  send(event: DashboardEvent): void {
    if (this.#listeners.size === 0) return;
    this.#writeAll(`event: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`);
  }

  /** End every stream (the server is stopping). */
  close(): void {
    this.#stopHeartbeat();
    for (const listener of this.#listeners) listener.end();
    this.#listeners.clear();
  }

  #writeAll(text: string): void {
    for (const listener of this.#listeners) listener.write(text);
  }

  #stopHeartbeat(): void {
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
  }
}
