/** What the dashboard's tests share: a real receiver, the dashboard's API with its token, its event stream. */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWebhooks, type WebhookLogger, type Webhooks } from 'service-webhooks';
import { nodeHandler } from 'service-webhooks/node';
import type { DashboardEvent, DevDelivery } from '../../src/dashboard/api-types.js';
import { type DevServer, type DevServerOptions, startDevServer } from '../../src/dashboard/dev-server.js';
import { DEV_TOKEN_HEADER } from '../../src/dev/report.js';

/**
 * A stand-in for the built page in `folder` (index.html with the token's placeholder, app.js, app.css),
 * for the server's tests, which need none of the page; the browser test serves the real one.
 */
export async function writeStandInPage(folder: string): Promise<string> {
  await mkdir(folder, { recursive: true });
  await writeFile(
    join(folder, 'index.html'),
    '<!doctype html><meta name="service-webhooks-dev-token" content="__SERVICE_WEBHOOKS_DEV_TOKEN__"><script type="module" src="/app.js"></script>',
  );
  await writeFile(join(folder, 'app.js'), 'export {};');
  await writeFile(join(folder, 'app.css'), 'body{}');
  return folder;
}

/**
 * A dev server for a test: a stand-in page in a folder of its own (`label` names it), a free port and
 * a fast clock (retries a minute × 0.001 away) unless `options` say otherwise. Its `close()` also
 * removes the folder.
 */
export async function startTestDevServer(
  label: string,
  options: Omit<DevServerOptions, 'assetsFolder'>,
): Promise<DevServer> {
  const folder = await mkdtemp(join(tmpdir(), `${label}-`));
  let server: DevServer;
  try {
    server = await startDevServer({
      port: 0,
      timeScale: 0.001,
      ...options,
      assetsFolder: await writeStandInPage(folder),
    });
  } catch (error) {
    await rm(folder, { recursive: true, force: true });
    throw error;
  }
  // The server itself, its getters included (`secret`), but for a close that also removes the folder.
  return Object.create(server, {
    close: {
      value: async () => {
        try {
          await server.close();
        } finally {
          await rm(folder, { recursive: true, force: true });
        }
      },
    },
  }) as DevServer;
}

/** A receiver on node:http whose handlers fail the first attempt of each event listed in `failOnce`. */
export interface TestReceiver {
  readonly url: string;
  readonly webhooks: Webhooks;
  /** Event ids whose first run throws (`Error('boom on the first attempt')`). */
  readonly failOnce: Set<string>;
  /** Event ids every run of which fails. */
  readonly failAlways: Set<string>;
  /** Runs per event id. */
  readonly runs: Map<string, number>;
  /** The next event's first run throws (`Error('boom on the first attempt')`); then this turns false. */
  failNext: boolean;
  close(): Promise<void>;
}

export async function startReceiver(secret: string, logger?: WebhookLogger): Promise<TestReceiver> {
  const failOnce = new Set<string>();
  const failAlways = new Set<string>();
  const runs = new Map<string, number>();
  const webhooks = createWebhooks({ secret, ...(logger !== undefined && { logger }) });
  webhooks.onAny(async (event) => {
    runs.set(event.id, (runs.get(event.id) ?? 0) + 1);
    if (receiver.failNext) {
      receiver.failNext = false;
      failOnce.add(event.id);
    }
    // A little work, so two concurrent copies overlap at the receiver.
    await new Promise((resolve) => setTimeout(resolve, 30));
    if (failAlways.has(event.id)) throw new Error('boom, always');
    if (failOnce.delete(event.id)) throw new Error('boom on the first attempt');
  });
  webhooks.onError(() => {});
  const server: Server = createServer(nodeHandler(webhooks));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const receiver: TestReceiver = {
    url: `http://127.0.0.1:${port}/webhooks`,
    webhooks,
    failOnce,
    failAlways,
    runs,
    failNext: false,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return receiver;
}

/** A call to the dashboard's API with its token. */
export async function devApi<T = unknown>(
  base: string,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; headers: Headers; body: T }> {
  const response = await fetch(new URL(`_dev/api${path}`, base), {
    method,
    headers: { [DEV_TOKEN_HEADER]: token, 'content-type': 'application/json' },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  const type = response.headers.get('content-type') ?? '';
  return {
    status: response.status,
    headers: response.headers,
    body: (type.startsWith('application/json') ? JSON.parse(text) : text) as T,
  };
}

/** The dashboard's event stream as a test reads it: every event so far, and a way to wait for one. */
export interface StreamReader {
  readonly events: DashboardEvent[];
  /** Wait for an event that `match` accepts (seen already or to come). */
  next(match: (event: DashboardEvent) => boolean, timeoutMs?: number): Promise<DashboardEvent>;
  /** The latest state of each delivery, by id. */
  readonly deliveries: Map<string, DevDelivery>;
  close(): void;
}

export async function openStream(base: string, token: string): Promise<StreamReader> {
  const controller = new AbortController();
  const response = await fetch(new URL(`_dev/api/events?token=${token}`, base), {
    signal: controller.signal,
  });
  if (response.status !== 200 || response.body === null)
    throw new Error(`stream answered ${response.status}`);
  const events: DashboardEvent[] = [];
  const deliveries = new Map<string, DevDelivery>();
  const waiters = new Set<() => void>();
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let end = buffer.indexOf('\n\n');
        while (end >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const type = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (type !== undefined && data !== undefined) {
            const event = { type, data: JSON.parse(data) } as DashboardEvent;
            events.push(event);
            if (event.type === 'delivery') deliveries.set(event.data.id, event.data);
            for (const wake of waiters) wake();
          }
          end = buffer.indexOf('\n\n');
        }
      }
    } catch {
      // Aborted by close().
    }
  })();
  return {
    events,
    deliveries,
    next(match, timeoutMs = 15_000) {
      const found = events.find(match);
      if (found !== undefined) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `no matching event in ${timeoutMs} ms; saw ${JSON.stringify(events.map((e) => e.type))}`,
            ),
          );
        }, timeoutMs);
        const check = () => {
          const hit = events.find(match);
          if (hit === undefined) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(hit);
        };
        waiters.add(check);
      });
    },
    close: () => controller.abort(),
  };
}

/** A settled delivery from the stream: `status` reached and no attempt in flight. */
export function settled(id: string, status: DevDelivery['status']) {
  return (event: DashboardEvent) =>
    event.type === 'delivery' &&
    event.data.id === id &&
    event.data.status === status &&
    !event.data.in_flight;
}
