/**
 * docs/inbox/flow-control.md's example, run as a reader runs it (in a project made as Getting started
 * says, with BullMQ's install and the packed build for service-webhooks; saved and run as the page says),
 * against the Redis on 127.0.0.1:6379 with a queue and a store prefix of its own. The page promises:
 * four events handled at attempt 1 (the first event's 429 spent no attempt), and no second with more
 * than two handler starts.
 */
import { Redis } from 'ioredis';
import { afterAll, expect, test } from 'vitest';
import { commandOnPage, docBlock, gettingStartedProject, installBlock } from './support.js';

const PAGE = 'docs/inbox/flow-control.md';
const REDIS_URL = 'redis://127.0.0.1:6379';
const queueName = `docs-flow-${crypto.randomUUID().slice(0, 8)}`;

afterAll(async () => {
  const redis = new Redis(REDIS_URL);
  const keys = [...(await redis.keys(`${queueName}:*`)), ...(await redis.keys(`bull:${queueName}:*`))];
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

test('the flow-control example: a 429 waited out at the same attempt, at most two starts a second', async () => {
  const project = await gettingStartedProject('inbox-bullmq', installBlock('docs/inbox/bullmq.md'));
  try {
    project.save(docBlock(PAGE, 'flow-control'), 'flow-control.ts');
    const { stdout } = await project.shell(commandOnPage(PAGE, 'npx tsx flow-control.ts'), {
      REDIS_URL,
      INBOX_QUEUE: queueName,
    });
    const lines = stdout.trim().split('\n');
    expect(lines.slice(0, 4).sort()).toEqual([
      'handled ada@example.com, attempt 1',
      'handled alan@example.com, attempt 1',
      'handled edsger@example.com, attempt 1',
      'handled grace@example.com, attempt 1',
    ]);
    expect(lines[4]).toMatch(/^handler starts in the busiest second: [12]$/);
  } finally {
    project.remove();
  }
}, 180_000);
