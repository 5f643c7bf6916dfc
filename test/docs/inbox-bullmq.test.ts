/**
 * docs/inbox/bullmq.md's quick start, run as a reader runs it (door and worker in one process): in a
 * project made as Getting started says, with the page's install (the packed build for service-webhooks),
 * saved and run as the page says, against the Redis on 127.0.0.1:6379 with a queue of its own. The page promises: the
 * door answers 200 once the event is queued, the worker runs the handler, the same event sent again is
 * a duplicate and the handler does not run again, and SIGTERM stops the process.
 */
import { Redis } from 'ioredis';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { expect, test } from 'vitest';
import { spawnProcess } from '../support/process.js';
import { commandOnPage, docBlock, gettingStartedProject, installBlock } from './support.js';

const PAGE = 'docs/inbox/bullmq.md';

const SECRET = 'whsec_docs_inbox';
const REDIS_URL = 'redis://127.0.0.1:6379';

test('the BullMQ quick start queues a signed event, the worker handles it once, a second copy is a duplicate', async () => {
  const queueName = `docs-inbox-${crypto.randomUUID().slice(0, 8)}`;
  const project = await gettingStartedProject('inbox-bullmq', installBlock(PAGE));
  project.save(docBlock(PAGE, 'inbox-bullmq'), 'inbox-demo.ts');
  const [, runner, file] = commandOnPage(PAGE, 'npx tsx inbox-demo.ts').split(' ');
  // The page's command, with the tsx that npx finds in the project started directly: the test sends
  // the process SIGTERM, which tsx passes on to the file; npm exec in between would get it instead.
  const demo = spawnProcess(`node_modules/.bin/${runner}`, [file!], {
    name: 'inbox quick start',
    cwd: project.dir,
    env: { REDIS_URL, INBOX_QUEUE: queueName, WEBHOOK_SECRET: SECRET, PORT: '0' },
  });
  try {
    const [, port] = await demo.waitFor(/Listening on http:\/\/localhost:(\d+)\/webhooks/);
    const event = createTestEvent('user.created', { data: { email: 'ada@example.com' } });
    const body = JSON.stringify(event);
    const send = () =>
      fetch(`http://127.0.0.1:${port}/webhooks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-service-signature': signPayload(body, SECRET) },
        body,
      });

    const first = await send();
    expect(first.status).toBe(200);
    expect(await first.text()).toBe('{"received":true}');
    await demo.waitFor(new RegExp(`handled ${event.id} for ada@example\\.com, attempt 1`));

    const second = await send();
    expect(second.status).toBe(200);
    expect(second.headers.get('x-webhook-duplicate')).toBe('true');
    await second.text();
    // A second run would print a second line: give the worker time to (wrongly) run it.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(
      demo
        .output()
        .split('\n')
        .filter((line) => line.startsWith(`handled ${event.id} `)),
    ).toHaveLength(1);

    demo.child.kill('SIGTERM');
    expect(await demo.exited).toBe(0);
    expect(demo.stderr()).not.toMatch(/Error|redis:/);
  } finally {
    await demo.stop('SIGKILL');
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`bull:${queueName}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
    project.remove();
  }
}, 180_000);
