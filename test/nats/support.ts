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

/**
 * The name in the INFO line the NATS server on `port` greets a client with, or undefined while nothing
 * answers there. A server of another test can hold the port (a free port is free only when looked at),
 * which is why the caller compares names rather than trusting an open port.
 */
async function serverNameOn(port: number, waitMs = 2_000): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = tcpConnect(port, '127.0.0.1');
    let greeting = '';
    const done = (name: string | undefined) => {
      socket.destroy();
      resolve(name);
    };
    socket.setEncoding('utf8');
    socket.setTimeout(waitMs, () => done(undefined));
    socket.on('data', (chunk: string) => {
      greeting += chunk;
      const line = greeting.match(/^INFO (\{.*\}) *\r\n/);
      if (line) done((JSON.parse(line[1]!) as { server_name?: string }).server_name);
    });
    socket.once('error', () => done(undefined));
  });
}

/** Wait until the server named `name` greets on `port`; false if its process ended first (port taken). */
async function ourServerListens(
  child: ChildProcess,
  port: number,
  name: string,
  timeoutMs = 15_000,
): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) return false;
    if ((await serverNameOn(port)) === name) return true;
    if (Date.now() > until)
      throw new Error(`nats-server ${name} did not listen on ${port} within ${timeoutMs} ms`);
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
  /** Its `server_name`, which tells it from a server of another test on the same port. */
  readonly #name = `sw-test-${randomBytes(6).toString('hex')}`;
  #child: ChildProcess | undefined;

  private constructor(port: number, dir: string) {
    this.#port = port;
    this.#dir = dir;
    this.url = `nats://127.0.0.1:${port}`;
  }

  /**
   * On a port free when looked at; another process may take it before the server binds it (the
   * server then exits), and the next free port is tried.
   */
  static async start(): Promise<OwnNatsServer> {
    const dir = mkdtempSync(join(tmpdir(), 'sw-nats-'));
    for (let attempt = 1; ; attempt++) {
      const server = new OwnNatsServer(await freePort(), dir);
      if (await server.#spawn()) return server;
      if (attempt === 5) throw new Error('nats-server found no free port in 5 attempts.');
    }
  }

  /** Whether the server started and is the one listening on its port. */
  async #spawn(): Promise<boolean> {
    const child = spawn(
      NATS_SERVER,
      ['-a', '127.0.0.1', '-p', String(this.#port), '-js', '-sd', this.#dir, '-n', this.#name],
      { stdio: 'ignore' },
    );
    this.#child = child;
    if (await ourServerListens(child, this.#port, this.#name)) return true;
    this.#child = undefined;
    child.kill('SIGKILL');
    return false;
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

  /**
   * Freeze the server (SIGSTOP): it keeps its sockets open and answers nothing. Resolves once the
   * server is seen frozen (a new client gets no greeting), so that a test's next step meets a hung
   * server and not one still answering: twice in CI, under load, a delivery right after the signal
   * was acknowledged.
   */
  async pause(): Promise<void> {
    this.#child?.kill('SIGSTOP');
    for (let tries = 0; await this.answers(); tries++) {
      if (tries === 20) throw new Error(`nats-server ${this.#name} still answers after SIGSTOP.`);
      this.#child?.kill('SIGSTOP');
    }
  }

  /** Whether the server greets a new client within 300 ms (a frozen one does not). */
  async answers(): Promise<boolean> {
    return (await serverNameOn(this.#port, 300)) === this.#name;
  }

  /** Let a frozen server go on (SIGCONT). */
  resume(): void {
    this.#child?.kill('SIGCONT');
  }

  /** Stop, then start again on the same port with the same store. */
  async restart(downMs = 0): Promise<void> {
    await this.stop();
    if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
    if (!(await this.#spawn()))
      throw new Error(`nats-server could not start again on port ${this.#port}: taken meanwhile.`);
  }

  /** Stop and delete the store. */
  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
