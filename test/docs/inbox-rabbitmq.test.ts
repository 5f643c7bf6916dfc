/**
 * docs/inbox/rabbitmq.md's quick start, run as a reader runs it (in a project made as Getting started
 * says, with the page's install, the packed build for service-webhooks; saved and run as the page
 * says), against the RabbitMQ on 127.0.0.1:5672 with queues of its own (parallel CI runs never share
 * them; deleted afterwards). The page promises: the door answers 200 before any handler ran, the worker
 * handles the event once, the same event again is a duplicate, and the process ends.
 */
import { connect } from 'amqplib';
import { DELAY_STEPS_MS, queuesOf } from 'service-webhooks/rabbitmq';
import { afterAll, expect, test } from 'vitest';
import { commandOnPage, docBlock, gettingStartedProject, installBlock } from './support.js';

const PAGE = 'docs/inbox/rabbitmq.md';
const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const queue = `docs-rabbitmq-${crypto.randomUUID().slice(0, 8)}`;

afterAll(async () => {
  const connection = await connect(AMQP_URL);
  const channel = await connection.createChannel();
  const queues = queuesOf(queue);
  for (const name of [queues.queue, queues.deadLetters, ...DELAY_STEPS_MS.map(queues.delay)])
    await channel.deleteQueue(name);
  await connection.close();
});

test('the RabbitMQ quick start queues the event, the worker handles it once, the copy is a duplicate', async () => {
  const project = await gettingStartedProject('inbox-rabbitmq', installBlock(PAGE));
  try {
    project.save(docBlock(PAGE, 'inbox-rabbitmq'), 'inbox-rabbitmq.ts');
    const { stdout, stderr } = await project.shell(commandOnPage(PAGE, 'npx tsx inbox-rabbitmq.ts'), {
      AMQP_URL,
      INBOX_QUEUE: queue,
    });
    expect(stderr).not.toMatch(/Error/);
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toBe('door: 200 {"received":true}');
    expect(lines[1]).toMatch(/^worker: handled evt_\S+ for ada@example\.com, attempt 1$/);
    expect(lines[2]).toBe('door, same event again: 200, duplicate: true');
  } finally {
    project.remove();
  }
}, 180_000);
