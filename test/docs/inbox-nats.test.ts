/**
 * docs/inbox/nats.md's quick start, run as a reader runs it (in a project made as Getting started
 * says, with the page's install, the packed build for service-webhooks; saved and run as the page
 * says), against the NATS with JetStream on 127.0.0.1:4222 with a stream of its own (deleted after,
 * so parallel CI runs never share it). The page promises: the door answers 200 before any handler
 * ran, the worker handles the event once, the same event again is a duplicate, and the process ends.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterAll, expect, test } from 'vitest';
import { commandOnPage, docBlock, gettingStartedProject, installBlock } from './support.js';

const PAGE = 'docs/inbox/nats.md';
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const stream = `docs-nats-${crypto.randomUUID().slice(0, 8)}`;

afterAll(async () => {
  const connection = await connect({ servers: NATS_URL });
  const jsm = await jetstreamManager(connection);
  for (const name of [stream, `${stream}-dead-letters`]) await jsm.streams.delete(name).catch(() => false);
  await connection.close();
});

test('the NATS quick start queues the event, the worker handles it once, the copy is a duplicate', async () => {
  const project = await gettingStartedProject('inbox-nats', installBlock(PAGE));
  try {
    project.save(docBlock(PAGE, 'inbox-nats'), 'inbox-nats.ts');
    const { stdout, stderr } = await project.shell(commandOnPage(PAGE, 'npx tsx inbox-nats.ts'), {
      NATS_URL,
      NATS_STREAM: stream,
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
