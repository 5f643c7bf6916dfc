/**
 * What the pg-boss tests share: a pg-boss on the test PostgreSQL in a schema of its own (dropped
 * afterwards, so parallel runs and reruns never meet), small pools, and unique queue names.
 */

import pg from 'pg';
import PgBoss from 'pg-boss';

export const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A schema name for one test file: pg-boss installs itself there. */
export function uniqueSchema(): string {
  return `pgboss_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
}

/** A unique queue name per test. */
export function uniqueQueue(label: string): string {
  return `${label}-${crypto.randomUUID().slice(0, 8)}`;
}

/**
 * A started pg-boss in `schema`: a small pool, and maintenance every second, so that a dead worker's
 * expired job is found within a second or two rather than pg-boss's default of minutes.
 */
export async function startBoss(
  schema: string,
  options: Partial<PgBoss.ConstructorOptions> = {},
): Promise<PgBoss> {
  const boss = new PgBoss({
    connectionString: DATABASE_URL,
    schema,
    max: 4,
    maintenanceIntervalSeconds: 1,
    schedule: false,
    ...options,
  });
  boss.on('error', () => {});
  await boss.start();
  return boss;
}

/** Drop a test file's pg-boss schema. */
export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

/** Poll `check` until it answers true, or fail with `what` after `timeoutMs`. */
export async function waitUntil(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 15_000) {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (performance.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
