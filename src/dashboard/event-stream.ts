import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DashboardEvent } from './api-types.js';

/** A comment line every so often keeps proxies and idle timers from closing a quiet stream. */
const HEARTBEAT_MS = 15_000;
/**
 * Events kept for a page that reconnects: a dropped connection is back within seconds, and a page
 * further behind loads the whole list instead.
 */
const KEPT_EVENTS = 500;
/** The events a reconnecting page may have missed; the others are snapshots the next one replaces. */
const RESUMABLE: ReadonlySet<DashboardEvent['type']> = new Set(['delivery', 'cleared']);

/**
 * The pages listening for changes, over server-sent events: one long response per page, each change
 * written to all of them as it happens (no polling, so a new attempt shows as soon as it is made).
 *
 * Each `delivery` and `cleared` event has an id (`<start>.<n>`, the start's own prefix so that a page
 * of a previous start never resumes in this one). A page that reconnects sends the last one it saw
 * (`Last-Event-ID`, which EventSource sends by itself, or `?last_event_id=`), and is sent what came
 * after it, then `sync`: so a dropped connection costs no reload of the whole list.
 */
export class EventStream {
  readonly #listeners = new Set<ServerResponse>();
  readonly #start = randomBytes(6).toString('base64url');
  /** The resumable events last sent, oldest first, each as written. */
  readonly #kept: { readonly n: number; readonly text: string }[] = [];
  #next = 1;
  #heartbeat: NodeJS.Timeout | undefined;

  /** How many pages listen now (the inbox's figures are read only while one does). */
  get size(): number {
    return this.#listeners.size;
  }

  /** Make `response` a listener until its page goes away, after sending it what it missed. */
  listen(request: IncomingMessage, response: ServerResponse, url: URL): number {
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    });
    // Reconnect after a second when the connection drops (EventSource's default is three).
    response.write('retry: 1000\n\n');
    const header = request.headers['last-event-id'];
    const missed = this.#since(typeof header === 'string' ? header : url.searchParams.get('last_event_id'));
    for (const event of missed ?? []) response.write(event.text);
    const sync = { resumed: missed !== undefined, missed: missed?.length ?? 0 };
    response.write(`${this.#idLine()}event: sync\ndata: ${JSON.stringify(sync)}\n\n`);
    this.#listeners.add(response);
    response.on('close', () => {
      this.#listeners.delete(response);
      if (this.#listeners.size === 0) this.#stopHeartbeat();
    });
    this.#heartbeat ??= setInterval(() => this.#writeAll(': keep-alive\n\n'), HEARTBEAT_MS).unref();
    return 200;
  }

  /** Send `event` to every listener, and keep it for those that reconnect when it may be missed. */
  send(event: DashboardEvent): void {
    const resumable = RESUMABLE.has(event.type);
    if (!resumable && this.#listeners.size === 0) return;
    let text = `event: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`;
    if (resumable) {
      const n = this.#next++;
      text = `id: ${this.#start}.${n}\n${text}`;
      this.#kept.push({ n, text });
      if (this.#kept.length > KEPT_EVENTS) this.#kept.shift();
    }
    this.#writeAll(text);
  }

  /** End every stream (the server is stopping). */
  close(): void {
    this.#stopHeartbeat();
    for (const listener of this.#listeners) listener.end();
    this.#listeners.clear();
  }

  /** The last id sent, so that a `sync` keeps the page's place even when no event came yet. */
  #idLine(): string {
    return this.#next === 1 ? '' : `id: ${this.#start}.${this.#next - 1}\n`;
  }

  /** The events after `lastId`, or `undefined` when they cannot all be told (none, another start, too old). */
  #since(lastId: string | null): { readonly n: number; readonly text: string }[] | undefined {
    if (lastId === null) return undefined;
    const dot = lastId.lastIndexOf('.');
    if (dot === -1 || lastId.slice(0, dot) !== this.#start) return undefined;
    const seen = Number(lastId.slice(dot + 1));
    if (!Number.isSafeInteger(seen) || seen < 0 || seen >= this.#next) return undefined;
    const oldest = this.#kept[0]?.n ?? this.#next;
    if (seen + 1 < oldest) return undefined;
    return this.#kept.filter((event) => event.n > seen);
  }

  #writeAll(text: string): void {
    for (const listener of this.#listeners) listener.write(text);
  }

  #stopHeartbeat(): void {
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
  }
}
