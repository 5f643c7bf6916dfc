/**
 * Which inbox `service-webhooks inbox` looks after, and the admin it opens for it: BullMQ on Redis,
 * pg-boss on PostgreSQL, SQS, RabbitMQ or NATS JetStream. Each engine's subpath and SDK are optional peers, loaded only here,
 * only for the engine asked for, so the bin never bundles them and the other commands run without them.
 */
import type { InboxAdmin } from 'service-webhooks/core';
import { type Flags, stringFlag, UsageError } from './args.js';

/** The engines, as `--engine` takes them. */
export const ENGINES = ['bullmq', 'pg-boss', 'sqs', 'rabbitmq', 'nats'] as const;
export type Engine = (typeof ENGINES)[number];

/** Where an inbox is: its engine and the address the admin connects to (for messages: no secret). */
export interface InboxAddress {
  readonly engine: Engine;
  readonly url: string;
}

/**
 * The engine and URL from the flags: `--engine`, else the scheme of `--url` (redis: BullMQ,
 * postgres: pg-boss, https: an SQS queue URL, amqp: RabbitMQ, nats: NATS JetStream); `--redis URL` is
 * BullMQ's older spelling. Without a URL, each engine's usual environment variable: REDIS_URL,
 * DATABASE_URL, SQS_QUEUE_URL, AMQP_URL, NATS_URL.
 */
export function inboxAddress(flags: Flags, env: NodeJS.ProcessEnv): InboxAddress {
  const named = stringFlag(flags, 'engine', false);
  if (named !== undefined && !(ENGINES as readonly string[]).includes(named)) {
    throw new UsageError(`--engine must be one of ${ENGINES.join(', ')}; got ${named}.`);
  }
  const redis = stringFlag(flags, 'redis', false);
  const given = stringFlag(flags, 'url', false);
  if (redis !== undefined && given !== undefined) throw new UsageError('Give --url or --redis, not both.');
  if (redis !== undefined && named !== undefined && named !== 'bullmq') {
    throw new UsageError(`--redis is the BullMQ inbox's address; --engine ${named} takes --url.`);
  }
  const url = given ?? redis;
  const engine = (named as Engine | undefined) ?? (given === undefined ? 'bullmq' : engineOf(given));
  const address = url ?? defaultUrl(engine, env);
  checkScheme(engine, address);
  return { engine, url: address };
}

function engineOf(url: string): Engine {
  if (/^rediss?:\/\//i.test(url)) return 'bullmq';
  if (/^postgres(ql)?:\/\//i.test(url)) return 'pg-boss';
  if (/^https?:\/\//i.test(url)) return 'sqs';
  if (/^amqps?:\/\//i.test(url)) return 'rabbitmq';
  if (NATS_URL.test(url)) return 'nats';
  throw new UsageError(
    `Cannot tell the inbox's engine from ${redactUrl(url)}: use a redis://, postgres://, amqp://, nats:// or SQS queue URL, or --engine.`,
  );
}

function defaultUrl(engine: Engine, env: NodeJS.ProcessEnv): string {
  switch (engine) {
    case 'bullmq':
      return env.REDIS_URL ?? 'redis://127.0.0.1:6379';
    case 'pg-boss':
      if (env.DATABASE_URL) return env.DATABASE_URL;
      throw new UsageError('--engine pg-boss needs the database: --url postgres://… or DATABASE_URL.');
    case 'sqs':
      if (env.SQS_QUEUE_URL) return env.SQS_QUEUE_URL;
      throw new UsageError(
        '--engine sqs needs the queue: --url https://sqs.<region>.amazonaws.com/… or SQS_QUEUE_URL.',
      );
    case 'rabbitmq':
      return env.AMQP_URL ?? 'amqp://127.0.0.1:5672';
    case 'nats':
      return env.NATS_URL ?? 'nats://127.0.0.1:4222';
  }
}

function checkScheme(engine: Engine, url: string): void {
  const ok = {
    bullmq: /^rediss?:\/\//i,
    'pg-boss': /^postgres(ql)?:\/\//i,
    sqs: /^https?:\/\//i,
    rabbitmq: /^amqps?:\/\//i,
    nats: NATS_URL,
  }[engine].test(url);
  if (!ok) {
    const wanted = {
      bullmq: 'a redis:// or rediss://',
      'pg-boss': 'a postgres://',
      sqs: 'an https:// queue',
      rabbitmq: 'an amqp:// or amqps://',
      nats: 'a nats:// (or tls://)',
    }[engine];
    throw new UsageError(`The ${engine} inbox needs ${wanted} URL, got ${redactUrl(url)}.`);
  }
}

/** An open admin and how to let go of what was opened for it. */
export interface OpenedAdmin {
  readonly admin: InboxAdmin;
  close(): Promise<void>;
}

/**
 * Open the admin of the inbox at `address`; `undefined` (after saying which packages to install, or
 * what is missing) when an optional peer is missing or the inbox named is not there. Configuration
 * mistakes become usage errors.
 */
export async function openInboxAdmin(
  address: InboxAddress,
  flags: Flags,
  err: (line: string) => void,
): Promise<OpenedAdmin | undefined> {
  const queue = stringFlag(flags, 'queue', false);
  const peers = {
    bullmq: 'bullmq ioredis',
    'pg-boss': 'pg-boss',
    sqs: '@aws-sdk/client-sqs',
    rabbitmq: 'amqplib',
    nats: '@nats-io/jetstream @nats-io/transport-node',
  }[address.engine];
  let opened: OpenedAdmin;
  try {
    opened = await open(address, flags, queue);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      err(
        `service-webhooks inbox --engine ${address.engine} needs the optional package${peers.includes(' ') ? 's' : ''} ${peers}: npm install ${peers} (${error instanceof Error ? error.message : String(error)}).`,
      );
      return undefined;
    }
    if (error instanceof UsageError) throw error;
    if (error instanceof InboxNotFoundError) {
      err(error.message);
      return undefined;
    }
    if ((error as { name?: string }).name === 'ConfigurationError') {
      throw new UsageError(error instanceof Error ? error.message : String(error));
    }
    throw error;
  }
  return opened;
}

async function open(address: InboxAddress, flags: Flags, queue: string | undefined): Promise<OpenedAdmin> {
  const { url } = address;
  switch (address.engine) {
    case 'bullmq': {
      // ioredis too: the admin makes its client with it, and a missing one should be named here.
      const [bullmq] = await Promise.all([import('service-webhooks/bullmq'), import('ioredis')]);
      const prefix = stringFlag(flags, 'prefix', false);
      // The admin's own client from the URL: a command ends (a few connection attempts, then the error).
      const admin = bullmq.inboxAdmin({
        connection: url,
        ...(queue === undefined ? {} : { queueName: queue }),
        ...(prefix === undefined ? {} : { prefix }),
      });
      return { admin, close: () => admin.close() };
    }
    case 'pg-boss': {
      const [engine, pgBoss] = await Promise.all([import('service-webhooks/pg-boss'), import('pg-boss')]);
      const PgBoss = (pgBoss as { PgBoss?: unknown }).PgBoss ?? (pgBoss as { default: unknown }).default;
      const schema = stringFlag(flags, 'schema', false);
      // An admin reads and writes jobs; it must not run pg-boss's maintenance or create its schema.
      let boss: PgBossLike;
      try {
        boss = new (PgBoss as new (options: object) => PgBossLike)({
          connectionString: url,
          max: 2,
          supervise: false,
          schedule: false,
          migrate: false,
          ...(schema === undefined ? {} : { schema }),
        });
      } catch (error) {
        // pg-boss checks its options as it is made, before any SQL: of the CLI's, only --schema can fail.
        throw new UsageError(
          `--schema ${schema}: ${error instanceof Error ? error.message : String(error)}.`,
        );
      }
      boss.on('error', () => {});
      await startPgBoss(boss, schema ?? 'pgboss', url);
      const admin = engine.pgBossInboxAdmin({
        boss: boss as never,
        ...(queue === undefined ? {} : { queue }),
        ...(schema === undefined ? {} : { schema }),
      });
      return {
        admin,
        close: async () => {
          await admin.close();
          await boss.stop({ graceful: false, wait: true });
        },
      };
    }
    case 'sqs': {
      const [engine, sdk] = await Promise.all([
        import('service-webhooks/sqs'),
        import('@aws-sdk/client-sqs'),
      ]);
      if (queue !== undefined) throw new UsageError('--queue is not for SQS: the queue URL names the queue.');
      const endpoint = stringFlag(flags, 'endpoint', false);
      const deadLetterQueueUrl = stringFlag(flags, 'dead-letter-queue', false);
      const region = /^https?:\/\/sqs\.([a-z0-9-]+)\./i.exec(url)?.[1];
      const client = new sdk.SQSClient({
        ...(region === undefined ? {} : { region }),
        ...(endpoint === undefined ? {} : { endpoint }),
      });
      const admin = engine.sqsInboxAdmin({
        client,
        queueUrl: url,
        ...(deadLetterQueueUrl === undefined ? {} : { deadLetterQueueUrl }),
      });
      return {
        admin,
        close: async () => {
          await admin.close();
          client.destroy();
        },
      };
    }
    case 'rabbitmq': {
      // amqplib too: the admin connects with it, and a missing one should be named here.
      const [engine] = await Promise.all([import('service-webhooks/rabbitmq'), import('amqplib')]);
      const admin = engine.rabbitMQInboxAdmin({ url, ...(queue === undefined ? {} : { queue }) });
      return { admin, close: () => admin.close() };
    }
    case 'nats': {
      const engine = await import('service-webhooks/nats');
      // The admin's own connection from the URL (a few tries, then the error), closed by close();
      // --queue names the stream.
      const admin = engine.natsInboxAdmin({
        connection: url,
        ...(queue === undefined ? {} : { stream: queue }),
      });
      // Connected here, so an unreachable server is the command's error, not the first figure's.
      await admin.stats();
      return { admin, close: () => admin.close() };
    }
  }
}

/** A NATS server's URL, or the first of a cluster's comma-separated list. */
const NATS_URL = /^(nats|tls):\/\//i;

/** The part of a PgBoss instance the CLI drives itself. */
interface PgBossLike {
  on(event: 'error', listener: (error: unknown) => void): unknown;
  start(): Promise<unknown>;
  stop(options: { graceful: boolean; wait: boolean }): Promise<void>;
  getDb(): {
    executeSql(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
    close?(): Promise<void>;
  };
}

/**
 * The inbox the flags name is not there (a schema missing from the database): the message says what is
 * missing and which flag names it; the command prints it and exits 1.
 */
export class InboxNotFoundError extends Error {
  override name = 'InboxNotFoundError';
  readonly code = 'inbox_not_found';
}

/**
 * Start the admin's pg-boss. pg-boss refuses to start on a schema it is not installed in with "pg-boss
 * is not installed", which reads as a missing npm package: when the schema itself is missing, say so.
 * A pg-boss that did not start does not close its pool on stop(), so it is closed here.
 */
async function startPgBoss(boss: PgBossLike, schema: string, url: string): Promise<void> {
  try {
    await boss.start();
  } catch (error) {
    const db = boss.getDb();
    // pg-boss writes the schema unquoted, so PostgreSQL folds it to lower case.
    const exists = await db.executeSql('SELECT 1 FROM pg_namespace WHERE nspname = lower($1)', [schema]).then(
      ({ rows }) => rows.length > 0,
      () => undefined,
    );
    await db.close?.().catch(() => {});
    if (exists === false) {
      throw new InboxNotFoundError(
        `The pg-boss schema ${schema} does not exist in the database at ${redactUrl(url)}: check --schema (pg-boss's \`schema\` option; default pgboss).`,
      );
    }
    throw error;
  }
}

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}
