/**
 * The inbox panel of `service-webhooks dev` against a real BullMQ inbox on a real Redis: the sandbox
 * delivers to the inbox's door, the worker dead-letters what fails, and the dashboard's API shows the
 * figures and the dead letters, streams them, and shows, replays and removes them through the same
 * admin the CLI's `inbox` command uses.
 */
import { afterAll, beforeAll, test } from 'vitest';
import type { DevServer } from '../../src/dashboard/dev-server.js';
import { startTestDevServer } from '../dashboard/support.js';
import { RefusingCrm } from '../support/inbox-cli.js';
import { expectInboxPanelRoundTrip } from '../support/inbox-panel.js';
import { SECRET, startDeadLetteringInbox } from './support.js';

const TOKEN = 'inbox-panel-token';
let inbox: Awaited<ReturnType<typeof startDeadLetteringInbox>>;
let dev: DevServer;
const crm = new RefusingCrm();

beforeAll(async () => {
  inbox = await startDeadLetteringInbox('dev-dashboard', crm.handler);
  dev = await startTestDevServer('dev-inbox', {
    forward: inbox.door.url,
    secret: SECRET,
    token: TOKEN,
    inbox: inbox.admin,
  });
});

afterAll(async () => {
  await dev?.close();
  await inbox?.close();
});

test('figures and dead letters, live; show, replay and remove through the admin', () =>
  expectInboxPanelRoundTrip({ devUrl: dev.url, token: TOKEN, engine: 'bullmq', crm }));
