/**
 * What the pg-boss tests share: pg-boss 10 (the newest line on Node 20) and 12 (through the
 * `pg-boss-12` alias) on the test PostgreSQL, each in a schema of its own (dropped afterwards, so
 * parallel runs and reruns never meet), small pools, unique queue names, and a TCP proxy to cut
 * PostgreSQL off from one client.
 */

import type { AddressInfo } from 'node:net';
import { createServer, type Socket, connect as tcpConnect } from 'node:net';
import pg from 'pg';
import PgBoss10 from 'pg-boss';
import { PgBoss as PgBoss12 } from 'pg-boss-12';
import type { PgBossLike } from 'service-webhooks/pg-boss';

export const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A started pg-boss, whatever its version, as the tests use it. */
export interface TestBoss extends PgBossLike {
  stop(options?: { graceful?: boolean; wait?: boolean }): Promise<void>;
}

/** One pg-boss version: how to start it in a schema, on a database URL. */
export interface BossVersion {
  readonly name: string;
  start(schema: string, connectionString?: string): Promise<TestBoss>;
}

/**
 * Maintenance and supervision every second, so that a dead worker's expired job is found within a
 * second or two rather than pg-boss's default of a minute or more.
 */
export const BOSS_VERSIONS: readonly BossVersion[] = [
  {
    name: 'pg-boss 10',
    async start(schema, connectionString = DATABASE_URL) {
      const boss = new PgBoss10({
        connectionString,
        schema,
        max: 4,
        maintenanceIntervalSeconds: 1,
        schedule: false,
      });
      boss.on('error', () => {});
      await boss.start();
      return boss as unknown as TestBoss;
    },
  },
  {
    name: 'pg-boss 12',
    async start(schema, connectionString = DATABASE_URL) {
      const boss = new PgBoss12({
        connectionString,
        schema,
        max: 4,
        superviseIntervalSeconds: 1,
        monitorIntervalSeconds: 1,
        maintenanceIntervalSeconds: 1,
        schedule: false,
      });
      boss.on('error', () => {});
      await boss.start();
      return boss as unknown as TestBoss;
    },
  },
];

/** A schema name for one test file and version: pg-boss installs itself there. */
export function uniqueSchema(): string {
  return `pgboss_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
}

/** A unique queue name per test. */
export function uniqueQueue(label: string): string {
  return `${label}-${crypto.randomUUID().slice(0, 8)}`;
}

/** Drop a pg-boss schema. */
export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

/**
 * A TCP proxy to the test PostgreSQL: `cut()` closes every connection through it and refuses new
 * ones, as an outage would for the clients behind it.
 */
export async function startProxy(): Promise<{ url: string; cut(): void; close(): Promise<void> }> {
  const target = new URL(DATABASE_URL);
  const sockets = new Set<Socket>();
  let down = false;
  const server = createServer((client) => {
    if (down) {
      client.destroy();
      return;
    }
    const upstream = tcpConnect(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = new URL(DATABASE_URL);
  url.host = `127.0.0.1:${port}`;
  return {
    url: url.toString(),
    cut() {
      down = true;
      for (const socket of sockets) socket.destroy();
    },
    async close() {
      down = true;
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
