/**
 * The API reference's front page (docs/api/index.md). TypeDoc writes it as a bare list of the module
 * names; this rewrites it as the guide's sidebar groups them, each module with one sentence on what it
 * is for, linked to the page TypeDoc made for it. Plain JavaScript: the docs build and a unit test
 * (test/docs/api-index.test.ts) import it.
 */
import { specifier, subpaths } from '../../subpaths.mjs';

/**
 * The groups in the sidebar's order, each subpath (subpaths.mjs's names) with its sentence. Every
 * public subpath is in exactly one group: the test fails on one left out.
 */
export const API_GROUPS = Object.freeze([
  {
    title: 'Introduction',
    modules: {
      index:
        'The package root: createWebhooks with the in-memory store, the typed events, the errors and the status table, everything most receivers import.',
      core: 'The same without MemoryStore, for runtimes and bundles that bring their own store: what every adapter and engine imports.',
      schemas:
        'Standard Schemas for the nine event types, with no dependency: each event checked before a handler sees it.',
    },
  },
  {
    title: 'Frameworks and runtimes',
    modules: {
      express:
        'An Express request handler (Express 4 and 5) that reads the raw body itself, within the receiver’s limits.',
      fastify:
        'A Fastify 5 plugin that adds the webhook route, reading the raw bytes while the app’s other routes keep their JSON parsing.',
      next: 'A Next.js App Router route handler, for the Node.js and the Edge runtime.',
      lambda:
        'An AWS Lambda handler whose answer has the shape its event source expects, its remaining time bounding the handlers.',
      node: 'A node:http listener, for plain servers and anything built on them.',
      web: 'A Fetch API handler (Request in, Response out) for Hono, Bun, Deno and Cloudflare Workers.',
    },
  },
  {
    title: 'Stores',
    modules: {
      redis: 'RedisStore: the claim and completion of each event id in Redis, for several processes.',
      dynamodb: 'DynamoDBStore: the same contract on a DynamoDB table, with conditional writes.',
      postgres: 'PostgresStore: the same contract on a PostgreSQL table.',
    },
  },
  {
    title: 'Inbox: acknowledge fast, process later',
    modules: {
      bullmq: 'The inbox on BullMQ (Redis): the door’s queue, the worker and the dead-letter admin.',
      'pg-boss': 'The inbox on pg-boss (PostgreSQL): the door’s queue, the worker and the dead-letter admin.',
      sqs: 'The inbox on Amazon SQS: the door’s queue, a polling worker or a Lambda handler, and the dead-letter admin.',
      rabbitmq:
        'The inbox on RabbitMQ: a door that answers after the broker’s publisher confirm, the worker with delay queues, and the dead-letter admin.',
      nats: 'The inbox on NATS JetStream: a door that answers after the stream’s acknowledgement, a pull-consumer worker, and the dead-letter admin.',
    },
  },
  {
    title: 'Observability',
    modules: {
      opentelemetry:
        'The OpenTelemetry plug-in: a span per delivery with an event per handler, and the delivery and inbox metrics.',
    },
  },
  {
    title: 'Tools',
    modules: {
      testing:
        'Test helpers: sign bodies as the service does, build realistic events, deliver them without HTTP, and check a store against the contract.',
      dev: 'devReporter: the receiver’s own account of each delivery, sent to the dashboard of service-webhooks dev.',
    },
  },
]);

/**
 * The front page, from the one TypeDoc wrote (whose module links it keeps).
 *
 * @param {string} generated TypeDoc's docs/api/index.md
 * @returns {string}
 */
export function apiIndex(generated) {
  /** @type {Map<string, string>} */
  const links = new Map();
  for (const [, name, link] of generated.matchAll(/\[([^\]]+)\]\(([^)]+)\)/g)) links.set(name, link);
  const lines = [
    '# API reference',
    '',
    'One module per import path, grouped as the guide is. Each page lists what the module exports, with the TSDoc of each.',
  ];
  for (const group of API_GROUPS) {
    lines.push('', `## ${group.title}`, '');
    for (const [name, sentence] of Object.entries(group.modules)) {
      const module = specifier(name);
      const link = links.get(module);
      if (link === undefined) {
        throw new Error(
          `The API reference has no page for ${module}; TypeDoc listed ${[...links.keys()].join(', ')}.`,
        );
      }
      lines.push(`- [\`${module}\`](${link}): ${sentence}`);
    }
  }
  const listed = API_GROUPS.flatMap((group) => Object.keys(group.modules));
  const missing = Object.keys(subpaths).filter((name) => !listed.includes(name));
  if (missing.length > 0)
    throw new Error(`scripts/docs/api-index.mjs has no sentence for ${missing.join(', ')}.`);
  return `${lines.join('\n')}\n`;
}
