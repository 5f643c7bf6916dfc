/**
 * Real Redis servers for the store tests: a standalone server and a three-master Cluster, each started
 * from the `redis-server` binary on free loopback ports with persistence off and a temp dir, and
 * stopped afterwards. `REDIS_URL` (standalone) and `REDIS_CLUSTER_NODES` (`host:port,host:port,...`)
 * point the tests at servers you run instead. Tests that stop or pause Redis always get their own.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type SpawnedProcess, spawnProcess } from './process.js';

const run = promisify(execFile);
const HOST = '127.0.0.1';

export interface RedisAddress {
  readonly host: string;
  readonly port: number;
}

/** Fail loudly, saying how to fix it, rather than skipping: a store test that never ran proves nothing. */
export function requireRedisBinaries(): void {
  for (const binary of ['redis-server', 'redis-cli']) {
    const found = spawnSync(binary, ['--version'], { encoding: 'utf8' });
    if (found.error || found.status !== 0) {
      throw new Error(
        `The Redis tests need \`${binary}\` on PATH and it was not found. Install it (Debian/Ubuntu: \`apt-get install redis-server\`, which brings redis-cli; macOS: \`brew install redis\`), or point the tests at running servers with REDIS_URL and REDIS_CLUSTER_NODES.`,
      );
    }
  }
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, HOST, () => server.close(() => resolve(true)));
  });
}

const claimedPorts = new Set<number>();

/**
 * A port that is free together with port + 10000 (a Cluster node's bus port), picked at random in a
 * range below the ephemeral ports so parallel test files rarely race for one.
 */
async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    if (claimedPorts.has(port)) continue;
    if ((await portIsFree(port)) && (await portIsFree(port + 10_000))) {
      claimedPorts.add(port);
      return port;
    }
  }
  throw new Error('No free loopback port pair for redis-server was found.');
}

async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', HOST, '-p', String(port), ...args], { timeout: 10_000 });
  return stdout.trim();
}

/** Poll `check` until it holds; `failure`, when it names one, ends the wait at once (a server that exited). */
async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 15_000,
  failure: () => string | undefined = () => undefined,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const failed = failure();
    if (failed) throw new Error(failed);
    try {
      if (await check()) return;
    } catch {
      // Not up yet.
    }
    if (performance.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** One `redis-server` process that can be stopped and started again on the same port. */
export class RedisServer implements RedisAddress {
  readonly host = HOST;
  #process: SpawnedProcess | undefined;

  private constructor(
    readonly port: number,
    readonly dir: string,
    readonly extraArgs: readonly string[],
  ) {}

  static async start(extraArgs: readonly string[] = [], dir?: string): Promise<RedisServer> {
    requireRedisBinaries();
    const server = new RedisServer(
      await freePort(),
      dir ?? mkdtempSync(join(tmpdir(), 'sw-redis-')),
      extraArgs,
    );
    await server.start();
    return server;
  }

  get url(): string {
    return `redis://${HOST}:${this.port}`;
  }

  get running(): boolean {
    return this.#process !== undefined;
  }

  async start(): Promise<void> {
    if (this.#process) return;
    // A worker that dies takes its servers with it: process.ts kills what it started on exit.
    const server = spawnProcess(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        HOST,
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        this.dir,
        '--dbfilename',
        `dump-${this.port}.rdb`,
        // Read only when cluster mode is on; one per node, as they share the dir.
        '--cluster-config-file',
        `nodes-${this.port}.conf`,
        ...this.extraArgs,
      ],
      { name: `redis-server on port ${this.port}`, stdout: 'ignore' },
    );
    this.#process = server;
    try {
      await waitFor(
        `redis-server on port ${this.port}`,
        async () => (await cli(this.port, 'PING')) === 'PONG',
        15_000,
        () => (server.hasExited() ? `redis-server exited: ${server.describe()}` : undefined),
      );
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  /** Stop the process (SIGKILL by default: an outage, not a shutdown). Data is gone: persistence is off. */
  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const server = this.#process;
    if (!server) return;
    this.#process = undefined;
    await server.stop(signal);
  }

  /** Run one redis-cli command against this server. */
  command(...args: string[]): Promise<string> {
    return cli(this.port, ...args);
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The standalone Redis the tests use: REDIS_URL when set, otherwise a server of our own. */
export interface StandaloneRedis {
  readonly url: string;
  readonly stop: () => Promise<void>;
}

export async function startStandalone(): Promise<StandaloneRedis> {
  const external = process.env.REDIS_URL;
  if (external) return { url: external, stop: async () => {} };
  const server = await RedisServer.start();
  return { url: server.url, stop: () => server.destroy() };
}

/** A Redis Cluster the tests use: REDIS_CLUSTER_NODES when set, otherwise three masters of our own. */
export interface ClusterRedis {
  readonly nodes: readonly RedisAddress[];
  /** The server processes, when the tests started them (never for REDIS_CLUSTER_NODES). */
  readonly servers?: readonly RedisServer[];
  readonly stop: () => Promise<void>;
}

/** `own` ignores REDIS_CLUSTER_NODES: for tests that kill nodes. */
export async function startCluster(masters = 3, { own = false } = {}): Promise<ClusterRedis> {
  const external = own ? undefined : process.env.REDIS_CLUSTER_NODES;
  if (external) {
    const nodes = external.split(',').map((entry) => {
      const [host = HOST, port = '6379'] = entry.trim().split(':');
      return { host, port: Number(port) };
    });
    return { nodes, stop: async () => {} };
  }
  requireRedisBinaries();
  const dir = mkdtempSync(join(tmpdir(), 'sw-redis-cluster-'));
  const servers: RedisServer[] = [];
  const stop = async () => {
    await Promise.all(servers.map((server) => server.stop()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < masters; i++) {
      servers.push(
        await RedisServer.start(['--cluster-enabled', 'yes', '--cluster-node-timeout', '2000'], dir),
      );
    }
    await run(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...servers.map((server) => `${HOST}:${server.port}`),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ],
      { timeout: 30_000 },
    );
    await waitFor('the cluster to agree on its slots', async () => {
      const states = await Promise.all(servers.map((server) => server.command('CLUSTER', 'INFO')));
      return states.every((info) => info.includes('cluster_state:ok'));
    });
  } catch (error) {
    await stop();
    throw error;
  }
  return { nodes: servers.map(({ host, port }) => ({ host, port })), servers, stop };
}
