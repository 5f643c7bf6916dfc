/**
 * What the NATS tests share: the machine's NATS with JetStream (127.0.0.1:4222, NATS_URL to change it),
 * stream names with a random suffix per test (deleted afterwards, so parallel runs never meet), and a
 * nats-server of a test's own, on a free port and a temporary store directory, for the tests that
 * restart a server (the shared one serves other runs and must never be restarted).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { natsInboxNames } from 'service-webhooks/nats';

export const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
export const SECRET = 'whsec_nats_tests';
const NATS_SERVER = process.env.NATS_SERVER ?? '/usr/sbin/nats-server';

/** A stream name no other run uses. */
export function uniqueStream(label: string): string {
  return `sw-test-${label}-${randomBytes(5).toString('hex')}`;
}

/** A connection to `url` for a test (reconnecting, as an application's would). */
export function connectNats(url = NATS_URL): Promise<NatsConnection> {
  return connect({ servers: url, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
}

/** Delete an inbox's streams (its consumer goes with them); missing ones are fine. */
export async function deleteInbox(connection: NatsConnection, stream: string): Promise<void> {
  const jsm = await jetstreamManager(connection);
  const names = natsInboxNames(stream);
  for (const name of [names.stream, names.deadLetterStream])
    await jsm.streams.delete(name).catch(() => false);
}

/** Wait until `check` holds, polling every 100 ms; throws naming `what` after `timeoutMs`. */
export async function waitUntil(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs: number,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A free TCP port on 127.0.0.1. */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function waitForPort(port: number, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = tcpConnect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > until) throw new Error(`nats-server did not listen on ${port} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * A nats-server of the test's own with JetStream on a free port, its store in a temporary directory
 * that outlives restarts: `restart()` stops it (SIGTERM) and starts it again on the same port and store.
 */
export class OwnNatsServer {
  readonly url: string;
  readonly #port: number;
  readonly #dir: string;
  #child: ChildProcess | undefined;

  private constructor(port: number, dir: string) {
    this.#port = port;
    this.#dir = dir;
    this.url = `nats://127.0.0.1:${port}`;
  }

  static async start(): Promise<OwnNatsServer> {
    const server = new OwnNatsServer(await freePort(), mkdtempSync(join(tmpdir(), 'sw-nats-')));
    await server.#spawn();
    return server;
  }

  async #spawn(): Promise<void> {
    this.#child = spawn(NATS_SERVER, ['-a', '127.0.0.1', '-p', String(this.#port), '-js', '-sd', this.#dir], {
      stdio: 'ignore',
    });
    await waitForPort(this.#port);
  }

  /** Stop the server as an operator would (SIGTERM, its store flushed), and wait until it exited. */
  async stop(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }

  /** Freeze the server (SIGSTOP): it keeps its sockets open and answers nothing. */
  pause(): void {
    this.#child?.kill('SIGSTOP');
  }

  /** Let a frozen server go on (SIGCONT). */
  resume(): void {
    this.#child?.kill('SIGCONT');
  }

  /** Stop, then start again on the same port with the same store. */
  async restart(downMs = 0): Promise<void> {
    await this.stop();
    if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
    await this.#spawn();
  }

  /** Stop and delete the store. */
  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
