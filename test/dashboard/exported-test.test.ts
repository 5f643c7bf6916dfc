/**
 * The test the dashboard exports is ready to run: written beside a receiver module, as a user would
 * save it, it passes against a receiver that handles the event, and fails against one whose handler
 * still throws (a regression test, not a recording). It runs in a vitest process of its own, from a
 * `.temp` folder the project's own test runs skip.
 */
import { spawnSync } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DevDelivery } from '../../src/dashboard/api-types.js';
import { type DevServer, startDevServer } from '../../src/dashboard/dev-server.js';
import { repoPath } from '../support/paths.js';
import {
  devApi,
  openStream,
  settled,
  startReceiver,
  type TestReceiver,
  writeStandInPage,
} from './support.js';

const TOKEN = 'exported-test-token';
const folder = repoPath('test', 'dashboard', '.temp', `exported-${process.pid}`);
let receiver: TestReceiver;
let dev: DevServer;

beforeAll(async () => {
  await writeStandInPage(folder);
  receiver = await startReceiver('whsec_exported_test');
  dev = await startDevServer({
    forward: receiver.url,
    secret: 'whsec_exported_test',
    port: 0,
    timeScale: 0.001,
    assetsFolder: folder,
    token: TOKEN,
  });
});

afterAll(async () => {
  await dev?.close();
  await receiver?.close();
  await rm(folder, { recursive: true, force: true });
});

function receiverModule(handlerBody: string): string {
  return `import { createWebhooks } from 'service-webhooks';
export function createReceiver(secret: string) {
  const webhooks = createWebhooks({ secret });
  webhooks.on('payment.failed', (event) => { ${handlerBody} });
  webhooks.onError(() => {});
  return webhooks;
}
`;
}

function runExported(): { status: number | null; output: string } {
  const run = spawnSync(
    process.execPath,
    [repoPath('node_modules', 'vitest', 'vitest.mjs'), 'run', '--config', join(folder, 'vitest.config.ts')],
    { cwd: folder, encoding: 'utf8', timeout: 60_000 },
  );
  return { status: run.status, output: `${run.stdout}\n${run.stderr}` };
}

it('exports a test that passes once the receiver handles the event, and fails while it throws', async () => {
  const stream = await openStream(dev.url, TOKEN);
  const sent = await devApi<{ data: DevDelivery[] }>(dev.url, TOKEN, 'POST', '/send', {
    type: 'payment.failed',
  });
  const delivery = sent.body.data[0]!;
  await stream.next(settled(delivery.id, 'succeeded'));
  stream.close();
  const exported = await devApi<string>(dev.url, TOKEN, 'GET', `/deliveries/${delivery.id}/export?as=test`);
  const name = /filename="([^"]+)"/.exec(exported.headers.get('content-disposition') ?? '')![1]!;
  await writeFile(join(folder, name), exported.body);
  await writeFile(
    join(folder, 'vitest.config.ts'),
    `import { packageAliases } from '${repoPath('vitest.config.ts')}';
export default { resolve: { alias: packageAliases }, test: { include: ['*.test.ts'] } };
`,
  );

  await writeFile(
    join(folder, 'receiver.ts'),
    receiverModule('if (!event.data.id) throw new Error("no id");'),
  );
  const passing = runExported();
  expect(passing.output).toContain('1 passed');
  expect(passing.status, passing.output).toBe(0);

  await writeFile(join(folder, 'receiver.ts'), receiverModule('throw new Error("the ledger is down");'));
  const failing = runExported();
  expect(failing.status).toBe(1);
  expect(failing.output).toContain('handler_failed');
}, 120_000);
