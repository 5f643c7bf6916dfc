/**
 * The inbox engines the inbox section measures side by side: BullMQ on the bench's Redis, pg-boss on
 * its PostgreSQL, SQS on fauxqs (an emulator in a process of its own: what it measures is the
 * library's and the SDK's overhead over HTTP, not AWS's latency), RabbitMQ on the broker at
 * BENCH_AMQP_URL (127.0.0.1:5672 by default), NATS JetStream on the bench's NATS (127.0.0.1:4222, file
 * storage: each event is on disk before the door answers). The parent prepares a queue per run
 * ({@link EngineSetups}); a child process opens the door's queue or starts a worker from that
 * JSON-serialisable setup ({@link openDoorInbox}, {@link startEngineWorker}).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { InboxQueue, Webhooks } from 'service-webhooks';

export const ENGINES = ['bullmq', 'pg-boss', 'sqs', 'rabbitmq', 'nats'] as const;
export type Engine = (typeof ENGINES)[number];

export const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const POSTGRES_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const NATS_URL = process.env.BENCH_NATS_URL ?? 'nats://127.0.0.1:4222';
const SQS_CREDENTIALS = { accessKeyId: 'bench', secretAccessKey: 'bench' };
const AMQP_URL = process.env.BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

/** Where one run's queue is, for every process of that run. */
export interface EngineSetup {
  readonly engine: Engine;
  readonly queueName: string;
  readonly sqs?: {
    readonly endpoint: string;
    readonly queueUrl: string;
    readonly deadLetterQueueUrl: string;
  };
  readonly postgres?: { readonly url: string; readonly schema: string };
}

/**
 * The parent's side: queues made per run, and what they need (the emulator, a pg-boss schema),
 * removed by {@link close}.
 */
export class EngineSetups {
  readonly #schema: string;
  #fauxqs: { endpoint: string; process: ChildProcess } | undefined;
  #usedPostgres = false;
  /** The RabbitMQ inboxes made, whose queues close() deletes. */
  readonly #rabbitQueues: string[] = [];
  /** The NATS streams made for the runs, deleted by close(). */
  readonly #natsStreams: string[] = [];

  constructor(nonce: string) {
    this.#schema = `sw_bench_${nonce.replace(/[^a-z0-9]/gi, '').toLowerCase()}`;
  }

  async prepare(engine: Engine, queueName: string): Promise<EngineSetup> {
    switch (engine) {
      case 'bullmq':
        return { engine, queueName };
      case 'rabbitmq':
        // The door declares the queues on its first event, the worker all of them as it starts.
        this.#rabbitQueues.push(queueName);
        return { engine, queueName };
      case 'nats':
        // The door makes the streams on its first event (a stream name takes no dots), the worker its consumer.
        this.#natsStreams.push(natsStream(queueName));
        return { engine, queueName };
      case 'pg-boss': {
        // The door makes the queue on its first event, the worker writes its settings on it.
        this.#usedPostgres = true;
        return { engine, queueName, postgres: { url: POSTGRES_URL, schema: this.#schema } };
      }
      case 'sqs': {
        const endpoint = await this.#emulator();
        const { SQSClient, CreateQueueCommand, GetQueueAttributesCommand } = await import(
          '@aws-sdk/client-sqs'
        );
        const client = new SQSClient({ endpoint, region: 'us-east-1', credentials: SQS_CREDENTIALS });
        try {
          const dead = await client.send(new CreateQueueCommand({ QueueName: `${queueName}-dlq` }));
          const deadArn = await client.send(
            new GetQueueAttributesCommand({ QueueUrl: dead.QueueUrl!, AttributeNames: ['QueueArn'] }),
          );
          const queue = await client.send(
            new CreateQueueCommand({
              QueueName: queueName,
              Attributes: {
                VisibilityTimeout: '60',
                RedrivePolicy: JSON.stringify({
                  deadLetterTargetArn: deadArn.Attributes!.QueueArn,
                  maxReceiveCount: 10,
                }),
              },
            }),
          );
          return {
            engine,
            queueName,
            sqs: { endpoint, queueUrl: queue.QueueUrl!, deadLetterQueueUrl: dead.QueueUrl! },
          };
        } finally {
          client.destroy();
        }
      }
    }
  }

  /** Stop the emulator, drop the pg-boss schema, delete the RabbitMQ queues. */
  async close(): Promise<void> {
    this.#fauxqs?.process.kill();
    if (this.#rabbitQueues.length > 0) {
      const [{ connect }, { DELAY_STEPS_MS, queuesOf }] = await Promise.all([
        import('amqplib'),
        import('service-webhooks/rabbitmq'),
      ]);
      const connection = await connect(AMQP_URL);
      try {
        const channel = await connection.createChannel();
        for (const queueName of this.#rabbitQueues.splice(0)) {
          const queues = queuesOf(queueName);
          for (const name of [queues.queue, queues.deadLetters, ...DELAY_STEPS_MS.map(queues.delay)])
            await channel.deleteQueue(name);
        }
      } finally {
        await connection.close();
      }
    }
    if (this.#natsStreams.length > 0) {
      const [{ connect }, { jetstreamManager }, { natsInboxNames }] = await Promise.all([
        import('@nats-io/transport-node'),
        import('@nats-io/jetstream'),
        import('service-webhooks/nats'),
      ]);
      const connection = await connect({ servers: NATS_URL });
      try {
        const jsm = await jetstreamManager(connection);
        for (const stream of this.#natsStreams.splice(0)) {
          const names = natsInboxNames(stream);
          for (const name of [names.stream, names.deadLetterStream])
            await jsm.streams.delete(name).catch(() => false);
        }
      } finally {
        await connection.close();
      }
    }
    if (this.#usedPostgres) {
      const { default: pg } = await import('pg');
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      try {
        await client.query(`DROP SCHEMA IF EXISTS ${this.#schema} CASCADE`);
      } finally {
        await client.end();
      }
    }
  }

  /** fauxqs in a child process, started once per section; answers its endpoint. */
  async #emulator(): Promise<string> {
    if (this.#fauxqs) return this.#fauxqs.endpoint;
    // `-e` resolves 'fauxqs' from the working directory: the project root, where the bench runs.
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "const { startFauxqs } = await import('fauxqs'); const server = await startFauxqs({ port: 0, logger: false }); process.send(server.port);",
      ],
      { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] },
    );
    const port = await new Promise<number>((resolve, reject) => {
      child.once('message', (message) => resolve(message as number));
      child.once('exit', (code) => reject(new Error(`fauxqs exited (${code}) before it listened.`)));
    });
    child.removeAllListeners('exit');
    child.disconnect();
    this.#fauxqs = { endpoint: `http://127.0.0.1:${port}`, process: child };
    return this.#fauxqs.endpoint;
  }
}

/** The part of a PgBoss instance the bench drives itself (pg-boss 10 to 12). */
interface Boss {
  on(event: 'error', listener: (error: unknown) => void): unknown;
  start(): Promise<unknown>;
  stop(options: { graceful: boolean; wait: boolean }): Promise<void>;
}

async function openBoss(postgres: NonNullable<EngineSetup['postgres']>): Promise<Boss> {
  const module = (await import('pg-boss')) as { PgBoss?: unknown; default?: unknown };
  const PgBoss = (module.PgBoss ?? module.default) as new (options: object) => Boss;
  const boss = new PgBoss({ connectionString: postgres.url, schema: postgres.schema, max: 10 });
  boss.on('error', () => {});
  await boss.start();
  return boss;
}

/** A queue name as a JetStream stream name: letters, digits, `-` and `_` only. */
function natsStream(queueName: string): string {
  return queueName.replace(/[^A-Za-z0-9_-]/g, '-');
}

async function natsConnection() {
  const { connect } = await import('@nats-io/transport-node');
  return connect({ servers: NATS_URL, maxReconnectAttempts: -1 });
}

async function sqsClient(sqs: NonNullable<EngineSetup['sqs']>) {
  const { SQSClient } = await import('@aws-sdk/client-sqs');
  return new SQSClient({ endpoint: sqs.endpoint, region: 'us-east-1', credentials: SQS_CREDENTIALS });
}

/** In a door process: the inbox of `setup`, and how to close what it opened. */
export async function openDoorInbox(
  setup: EngineSetup,
): Promise<{ inbox: InboxQueue; close: () => Promise<void> }> {
  switch (setup.engine) {
    case 'bullmq': {
      const { bullmqInbox } = await import('service-webhooks/bullmq');
      const inbox = bullmqInbox({ connection: REDIS_URL, queueName: setup.queueName });
      return { inbox, close: () => inbox.close() };
    }
    case 'pg-boss': {
      const { pgBossInbox } = await import('service-webhooks/pg-boss');
      const boss = await openBoss(setup.postgres!);
      const inbox = pgBossInbox({ boss: boss as never, queue: setup.queueName });
      return { inbox, close: () => boss.stop({ graceful: false, wait: true }) };
    }
    case 'nats': {
      const { natsInbox } = await import('service-webhooks/nats');
      const connection = await natsConnection();
      const inbox = natsInbox({ connection, stream: natsStream(setup.queueName) });
      return { inbox, close: () => connection.close() };
    }
    case 'sqs': {
      const { sqsInbox } = await import('service-webhooks/sqs');
      const client = await sqsClient(setup.sqs!);
      const inbox = sqsInbox({ client, queueUrl: setup.sqs!.queueUrl });
      return { inbox, close: async () => client.destroy() };
    }
    case 'rabbitmq': {
      const { rabbitMQInbox } = await import('service-webhooks/rabbitmq');
      const inbox = rabbitMQInbox({ url: AMQP_URL, queue: setup.queueName });
      return { inbox, close: () => inbox.close() };
    }
  }
}

/** In a worker process: a worker of `setup` running `webhooks`, 50 events at once. */
export async function startEngineWorker(
  webhooks: Webhooks,
  setup: EngineSetup,
): Promise<{ close: () => Promise<void> }> {
  const concurrency = 50;
  switch (setup.engine) {
    case 'bullmq': {
      const { startInboxWorker } = await import('service-webhooks/bullmq');
      const worker = startInboxWorker(webhooks, {
        connection: REDIS_URL,
        queueName: setup.queueName,
        concurrency,
        monitor: false,
        keepCompleted: 0,
      });
      await worker.waitUntilReady();
      return { close: () => worker.close() };
    }
    case 'pg-boss': {
      const { startPgBossWorker } = await import('service-webhooks/pg-boss');
      const boss = await openBoss(setup.postgres!);
      const worker = await startPgBossWorker(webhooks, {
        boss: boss as never,
        queue: setup.queueName,
        schema: setup.postgres!.schema,
        concurrency,
        monitor: false,
      });
      return {
        close: async () => {
          await worker.close();
          await boss.stop({ graceful: false, wait: true });
        },
      };
    }
    case 'nats': {
      const { startNatsWorker } = await import('service-webhooks/nats');
      const worker = await startNatsWorker(webhooks, {
        connection: NATS_URL,
        stream: natsStream(setup.queueName),
        concurrency,
        monitor: false,
      });
      return { close: () => worker.close() };
    }
    case 'sqs': {
      const { startSqsWorker } = await import('service-webhooks/sqs');
      const client = await sqsClient(setup.sqs!);
      const worker = startSqsWorker(webhooks, {
        client,
        queueUrl: setup.sqs!.queueUrl,
        deadLetterQueueUrl: setup.sqs!.deadLetterQueueUrl,
        concurrency,
        monitor: false,
      });
      return {
        close: async () => {
          await worker.close();
          client.destroy();
        },
      };
    }
    case 'rabbitmq': {
      const { startRabbitMQWorker } = await import('service-webhooks/rabbitmq');
      const worker = startRabbitMQWorker(webhooks, {
        url: AMQP_URL,
        queue: setup.queueName,
        concurrency,
        monitor: false,
      });
      await worker.waitUntilReady();
      return { close: () => worker.close() };
    }
  }
}
