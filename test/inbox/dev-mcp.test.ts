/**
 * The dead-letter tools of the dev server's MCP endpoint against a real BullMQ inbox on a real Redis,
 * driven by the SDK's own client: the sandbox delivers to the inbox's door, the worker dead-letters what
 * fails, and an agent lists, shows, replays and removes the dead letters through the same admin the
 * dashboard and the CLI's `inbox` command use. The tools without an inbox are in
 * test/dashboard/mcp.test.ts.
 */
import type { DeadLetter } from 'service-webhooks';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { DevServer } from '../../src/dashboard/dev-server.js';
import { connectMcp, eventually, type McpTestClient } from '../dashboard/mcp-client.js';
import { startTestDevServer } from '../dashboard/support.js';
import { RefusingCrm } from '../support/inbox-cli.js';
import { waitUntil } from '../support/wait-until.js';
import { SECRET, startDeadLetteringInbox } from './support.js';

const TOKEN = 'inbox-mcp-token-of-some-length';
let inbox: Awaited<ReturnType<typeof startDeadLetteringInbox>>;
let dev: DevServer;
let mcp: McpTestClient;
const crm = new RefusingCrm();

beforeAll(async () => {
  inbox = await startDeadLetteringInbox('dev-mcp', crm.handler);
  dev = await startTestDevServer('dev-mcp-inbox', {
    forward: inbox.door.url,
    secret: SECRET,
    token: TOKEN,
    inbox: inbox.admin,
  });
  mcp = await connectMcp(dev.mcpUrl, TOKEN);
});

afterAll(async () => {
  await mcp?.close();
  await dev?.close();
  await inbox?.close();
});

type Listed = { engine: string; total: number; stats: { deadLettered: number }; dead_letters: DeadLetter[] };

test('an agent lists, shows, replays and removes dead letters', async () => {
  const empty = await mcp.call<Listed>('list_dead_letters');
  expect(empty.json).toMatchObject({ engine: 'bullmq', total: 0, dead_letters: [] });

  const events: string[] = [];
  for (const type of ['user.created', 'payment.failed']) {
    const sent = await mcp.call<{ deliveries: { event_id: string }[] }>('send_event', { type });
    events.push(sent.json.deliveries[0]!.event_id);
  }
  // The door acknowledges at once; the worker's one attempt fails and dead-letters each event.
  const listed = await eventually('two dead letters', async () => {
    const { json } = await mcp.call<Listed>('list_dead_letters');
    return json.total === 2 ? json : undefined;
  });
  expect(listed.stats.deadLettered).toBe(2);
  expect(listed.dead_letters.map((letter) => letter.eventId).sort()).toEqual([...events].sort());
  expect(listed.dead_letters[0]!.lastError).toContain('crm.example refused');
  // The list is brief: the entry and the stacks are get_dead_letter's.
  expect(listed.dead_letters[0]).not.toHaveProperty('entry');

  const first = listed.dead_letters.find((letter) => letter.eventId === events[0])!;
  const shown = await mcp.call<DeadLetter>('get_dead_letter', { job_id: first.jobId });
  expect(shown.json).toMatchObject({ eventId: events[0], eventType: 'user.created', attempts: 1 });
  expect(shown.json.stacktrace.join('\n')).toContain('crm.example refused');

  crm.failing = false;
  const replayed = await mcp.call('replay_dead_letter', { job_id: first.jobId });
  expect(replayed.json).toMatchObject({ eventId: events[0], replayOf: first.jobId });
  await waitUntil('the replay to run', () => crm.handled.includes(events[0]!), 10_000);

  const second = listed.dead_letters.find((letter) => letter.eventId === events[1])!;
  expect((await mcp.call('remove_dead_letter', { job_id: second.jobId })).json).toEqual({ removed: true });
  expect((await mcp.call('remove_dead_letter', { job_id: second.jobId })).json).toEqual({ removed: false });
  const gone = await mcp.call('get_dead_letter', { job_id: second.jobId });
  expect(gone).toMatchObject({ isError: true, text: expect.stringMatching(/^dead_letter_not_found: /) });
  const missingReplay = await mcp.call('replay_dead_letter', { job_id: second.jobId });
  expect(missingReplay.isError).toBe(true);

  const after = await mcp.call<Listed>('list_dead_letters');
  expect(after.json).toMatchObject({ total: 0, dead_letters: [] });
  for (const text of mcp.answers) expect(text).not.toContain(SECRET);
});
